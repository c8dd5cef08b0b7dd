# shellcheck shell=bash
# A three-member Patroni cluster in network namespaces, for tests/real/real_patroni.sh and
# tests/bench/patroni_rollout.sh. Sourced after tests/integration/coord/lib.sh and
# coord/netns.sh (ns_setup: VM i is the namespace NS[i], 10.213.X.(10+i) on the IMDS bridge,
# where the host is 10.213.X.1, and 10.214.X.(10+i) on the VMs' network).
#
#   etcd        one etcd-server 3.4 on the host side, http://10.213.X.1:2379 (Patroni's etcd3
#               section: etcd 3.4 serves v3 over its JSON gateway), data in $TMP/etcd
#   vm_i        PostgreSQL 15 (/usr/lib/postgresql/15/bin, run as user postgres, data in
#               $PGD/pg_i/data, not Debian's cluster tooling) under Patroni (member vm_i,
#               configuration $PGD/pg_i/patroni.yml, log $PGD/pg_i/patroni.log); REST API
#               :8008 and PostgreSQL :5432 on every address of the VM; replication over the
#               VMs' network
#   platform    pg_platform_cmd: the --on-impact command of imds-sim: at an impact's start
#               it records one round of every member's GET /patroni and /cluster
#               ($TMP/probes.jsonl) and kills every process of user postgres in that VM
#               (kill -9: Patroni and PostgreSQL, as a reboot would; the agent and the
#               coordinator, root's, stay); at its end it starts Patroni again, as the VM's boot;
#               PG_REPL_DELAY=S (default 0): the VM's connections to PostgreSQL on the VMs'
#               network (its replication) are refused for S s more (iptables in the VM)
#   writer      pg_writer_start: patroni/writer.py from the host, a row every 100 ms through
#               host=10.213.X.10,10.213.X.11,10.213.X.12 target_session_attrs=read-write
#   watch       pg_watch_start: patroni/watch.py polls every member every 0.25 s
#   agents      agent_start (ns_start's): the hook HOOK
# Patroni's timings: PG_TTL, PG_LOOP_WAIT, PG_RETRY_TIMEOUT (Patroni's defaults: 30, 10, 10).

PGBIN=/usr/lib/postgresql/15/bin
# Debian's python3, whose modules the packages install (python3-psycopg2): not whatever python3
# comes first in PATH
PGPY=/usr/bin/python3
PGLIB="$SC_SRC/tests/real/patroni"

# pg_need: fails (never skips) when a package of deploy/install-deps.sh --test is missing
pg_need() {
    local c
    for c in patroni etcd "$PGPY" setpriv iptables "$PGBIN/postgres" "$PGBIN/initdb"; do
        command -v "$c" >/dev/null ||
            fail "$c missing: install patroni, etcd-server, postgresql-15, python3-psycopg2, iptables (deploy/install-deps.sh --test)"
    done
    "$PGPY" -c 'import psycopg2' 2>/dev/null || fail "python3-psycopg2 missing (deploy/install-deps.sh --test)"
    id postgres >/dev/null 2>&1 || fail "no user postgres (the postgresql-15 package makes it)"
}

# PGD: where the members' directories go: $TMP when user postgres can reach it, else a
# directory of /tmp, removed on exit (a build tree in a home of mode 0700, such as /root)
if setpriv --reuid=postgres --regid=postgres --clear-groups test -x "$TMP" 2>/dev/null; then
    PGD=$TMP
else
    PGD=$(mktemp -d /tmp/sc-real-patroni.XXXXXX)
    chmod 755 "$PGD"
    echo "(user postgres cannot reach $TMP: the members' directories are in $PGD)"
fi

# pg_on_exit: netns.sh's cleanup (every process of the namespaces, the namespaces, the
# bridges), then the SysV shared memory segments the killed postmasters left
eval "pg_ns_on_exit() $(declare -f sc_on_exit | tail -n +2)"
sc_on_exit() {
    sc_kill "${PG_PIDS[@]}"
    pg_ns_on_exit
    local i id
    for ((i = 0; i < 3; i++)); do
        # postmaster.pid's 7th line: the shared memory key and id
        id=$(sed -n '7p' "$PGD/pg_$i/data/postmaster.pid" 2>/dev/null | awk '{ print $2 }')
        [ -z "$id" ] || ipcrm -m "$id" 2>/dev/null || true
    done
    [ "$PGD" = "$TMP" ] || rm -rf "$PGD"
}
PG_PIDS=()

# pg_etcd_start: the DCS
pg_etcd_start() {
    local h="10.213.$NS_X.1"
    mkdir -p "$TMP/etcd"
    etcd --name e0 --data-dir "$TMP/etcd/data" --listen-client-urls "http://$h:2379" \
        --advertise-client-urls "http://$h:2379" --listen-peer-urls "http://$h:2380" \
        --initial-advertise-peer-urls "http://$h:2380" --initial-cluster "e0=http://$h:2380" \
        --logger zap --log-outputs stderr --log-level warn >"$TMP/etcd/out" 2>"$TMP/etcd/err" &
    PG_PIDS+=("$!")
    PG_ETCD="$h:2379"
    etcd_up() { curl -sf "http://$PG_ETCD/health" | grep -q '"health":"true"'; }
    wait_for 20 etcd_up || fail "etcd did not start: $(tail -3 "$TMP/etcd/err")"
}

# pg_configure I: vm_I's Patroni configuration and directory
pg_configure() {
    local i=$1 d="$PGD/pg_$1"
    mkdir -p "$d"
    cat >"$d/patroni.yml" <<YML
scope: sc$$
name: vm_$i
restapi:
  listen: 0.0.0.0:8008
  connect_address: 10.214.$NS_X.$((10 + i)):8008
etcd3:
  host: $PG_ETCD
bootstrap:
  dcs:
    ttl: ${PG_TTL:-30}
    loop_wait: ${PG_LOOP_WAIT:-10}
    retry_timeout: ${PG_RETRY_TIMEOUT:-10}
    maximum_lag_on_failover: 1048576
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 64MB
  initdb:
  - encoding: UTF8
  - locale: C
  pg_hba:
  - local all all trust
  - host all all 0.0.0.0/0 trust
  - host replication all 0.0.0.0/0 trust
postgresql:
  listen: 0.0.0.0:5432
  connect_address: 10.214.$NS_X.$((10 + i)):5432
  data_dir: $d/data
  bin_dir: $PGBIN
  pgpass: $d/pgpass
  authentication:
    superuser: {username: postgres, password: sc}
    replication: {username: replicator, password: sc}
  parameters:
    unix_socket_directories: $d
    shared_buffers: 16MB
    max_connections: 30
  basebackup:
  - checkpoint: fast
YML
    chown -R postgres:postgres "$d"
}

# pg_member_script: $TMP/member.sh start|kill I: starts vm_I's Patroni (detached, as user
# postgres, in the VM's namespace) / kills every process of user postgres in the VM (-9)
pg_member_script() {
    local uid
    uid=$(id -u postgres)
    cat >"$TMP/member.sh" <<MEMBER
#!/bin/bash
# member.sh start|kill I (tests/real/patroni/lib.sh)
i=\$2 ns=sc$$v\$2 d="$PGD/pg_\$2"
case \$1 in
start)
    echo "--- \$(date -u +%T.%3N) start" >>"\$d/patroni.log"
    setsid ip netns exec "\$ns" setpriv --reuid=postgres --regid=postgres --init-groups \\
        env -i PATH=/usr/bin:/bin LANG=C.UTF-8 HOME="\$d" patroni "\$d/patroni.yml" \\
        >>"\$d/patroni.log" 2>&1 </dev/null &
    ;;
kill)
    for _ in \$(seq 100); do
        pids=\$(for p in \$(ip netns pids "\$ns"); do
            [ "\$(stat -c %u "/proc/\$p" 2>/dev/null)" != $uid ] || echo "\$p"; done)
        [ -n "\$pids" ] || exit 0
        kill -9 \$pids 2>/dev/null
        sleep 0.05
    done
    echo "member.sh: vm_\$i's processes of postgres do not die" >&2
    exit 1
    ;;
esac
MEMBER
    chmod +x "$TMP/member.sh"
}

# agent_start I (replaces netns.sh's, for ns_start): vm_I's agent in its namespace, the hook
# HOOK (the patroni hook) as both hooks, through write_hook's recorder (hooks.log for
# check.py), its stderr in $TMP/agent_I/patroni-hook.log; a prepare starts with a round of
# watch.py probe --at prepare; its settings: the member's Patroni
# configuration (for its name), 0.5 s between looks. A switchover and a re-follow take seconds.
agent_start() {
    local d="$TMP/agent_$1"
    mkdir -p "$d"
    printf '%s\n' "SCHEDCOORD_PATRONI_CONFIG=$PGD/pg_$1/patroni.yml" SCHEDCOORD_PATRONI_POLL=0.5 \
        SCHEDCOORD_PATRONI_TIMEOUT=120 >"$d/hooks.env"
    # (a prepare first records a round of every member: the next domain starts)
    cat >"$d/run-hook" <<RUN
#!/bin/sh
[ "\$SCHEDCOORD_PHASE" != prepare ] ||
    "$PGPY" "$PGLIB/watch.py" probe --at prepare --vm vm_$1 --out "$TMP/probes.jsonl" --api $(pg_apis | tr '\n' ' ')
exec env SCHEDCOORD_HOOKS_ENV="$d/hooks.env" "$HOOK" 2>>"$d/patroni-hook.log"
RUN
    chmod +x "$d/run-hook"
    write_hook "$1" 0 none true "$d/run-hook"
    # shellcheck disable=SC2046 # sec_args prints separate words
    ip netns exec "${NS[$1]}" "$SC_BIN/schedcoord-agent" --name "vm_$1" --imds-url "$B/vm_$1" \
        --members "$MEMBERS" --state-dir "$d" --prepare-hook "$d/hook" --recover-hook "$d/hook" \
        $(sec_args "vm_$1") --poll-interval 0.5 $(fast_agent) --standalone-after 600 \
        --hook-timeout 300 --log-level warn >>"$d.out" 2>>"$d.err" &
    AGENT_PIDS[$1]=$!
}

# pg_apis: NAME=URL of every member's REST API, from the host
pg_apis() { local i; for ((i = 0; i < 3; i++)); do echo "vm_$i=http://10.213.$NS_X.$((10 + i)):8008"; done; }

# pg_platform_cmd: the --on-impact command (see the top); platform.log has "down VM" and "up VM"
pg_platform_cmd() {
    cat >"$TMP/platform.sh" <<PLATFORM
#!/bin/bash
# imds-sim --on-impact: start|end VM EventType EventId
i=\${2#vm_}
if [ "\$1" = start ]; then
    "$PGPY" "$PGLIB/watch.py" probe --at impact --api $(pg_apis | tr '\n' ' ') --vm "\$2" --out "$TMP/probes.jsonl"
    "$TMP/member.sh" kill "\$i"
    echo "\$(date +%s.%N) down \$2 \$4" >>"$TMP/platform.log"
else
    if [ ${PG_REPL_DELAY:-0} != 0 ]; then
        # (its replication back only PG_REPL_DELAY s after the VM: over eth1, to the leader)
        rule="OUTPUT -o eth1 -p tcp --dport 5432 -j REJECT --reject-with tcp-reset"
        ip netns exec "sc$$v\$i" iptables -I \$rule
        setsid bash -c "sleep ${PG_REPL_DELAY:-0}; ip netns exec sc$$v\$i iptables -D \$rule &&
            echo \\\$(date +%s.%N) replication \$2 >>'$TMP/platform.log'" </dev/null >/dev/null 2>&1 &
    fi
    "$TMP/member.sh" start "\$i"
    echo "\$(date +%s.%N) up \$2 \$4" >>"$TMP/platform.log"
fi
PLATFORM
    chmod +x "$TMP/platform.sh"
    : >>"$TMP/platform.log"
    echo "$TMP/platform.sh"
}

# pg_cluster I: vm_I's GET /cluster as lines "NAME ROLE STATE LAG"
pg_cluster() {
    curl -s --max-time 2 "http://10.213.$NS_X.$((10 + $1)):8008/cluster" |
        jq -r '.members[] | "\(.name) \(.role) \(.state) \(.lag // "-")"'
}
# pg_leads I: vm_I's /cluster names vm_I leader, and its PostgreSQL takes writes
pg_leads() {
    pg_cluster "$1" | grep -qx "vm_$1 leader running -" &&
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://10.213.$NS_X.$((10 + $1)):8008/primary")" = 200 ]
}
# pg_all_streaming: some member leads, and the leader's GET /patroni lists the two others as
# streaming, each running in /cluster with a lag known and under 1 MB
pg_all_streaming() {
    local i l c
    for ((i = 0; i < 3; i++)); do pg_leads "$i" && l=$i && break; done
    [ -n "${l:-}" ] || return 1
    c=$(pg_cluster "$l")
    [ "$(curl -s --max-time 2 "http://10.213.$NS_X.$((10 + l)):8008/patroni" |
        jq '[.replication[]? | select(.state == "streaming")] | length')" = 2 ] || return 1
    [ "$(awk '$2 != "leader" && $3 == "running" && $4 ~ /^[0-9]+$/ && $4 < 1048576' <<<"$c" | wc -l)" = 2 ]
}

# pg_setup: etcd, the three members (vm_0 bootstraps and leads; vm_1 and vm_2 clone it and
# stream), and the table t of the writer
pg_setup() {
    local i
    pg_need
    pg_etcd_start
    for ((i = 0; i < 3; i++)); do pg_configure "$i"; done
    pg_member_script
    "$TMP/member.sh" start 0
    s_leads0() { pg_leads 0; }
    wait_for 120 s_leads0 || fail "vm_0 does not lead after its bootstrap: $(tail -5 "$PGD/pg_0/patroni.log")"
    "$TMP/member.sh" start 1
    "$TMP/member.sh" start 2
    wait_for 180 pg_all_streaming ||
        fail "the replicas do not stream: $(pg_cluster 0 | tr '\n' ';') $(tail -3 "$PGD/pg_1/patroni.log" "$PGD/pg_2/patroni.log")"
    PG_DSN="host=10.213.$NS_X.10,10.213.$NS_X.11,10.213.$NS_X.12 port=5432 dbname=postgres user=postgres password=sc target_session_attrs=read-write connect_timeout=2 keepalives_idle=2 keepalives_interval=1 keepalives_count=2"
    "$PGPY" -c 'import psycopg2, sys
c = psycopg2.connect(sys.argv[1]); c.autocommit = True
c.cursor().execute("CREATE TABLE t (n int PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())")' "$PG_DSN" ||
        fail "cannot create the table"
}

# pg_writer_start / pg_watch_start: see the top; pg_writer_stop, pg_watch_stop
pg_writer_start() {
    "$PGPY" "$PGLIB/writer.py" --dsn "$PG_DSN" --log "$TMP/writer.log" 2>>"$TMP/writer.err" &
    PG_WRITER=$!
    PG_PIDS+=("$PG_WRITER")
    : >>"$TMP/writer.log"
    s_wrote() { grep -q '^ok ' "$TMP/writer.log"; }
    wait_for 10 s_wrote || fail "the writer does not write: $(tail -3 "$TMP/writer.log" "$TMP/writer.err")"
}
# pg_writer_more N: waits until the writer committed N rows more than when called (rows
# written against the cluster as it is now, not a time)
pg_writer_more() {
    local w0
    w0=$(grep -c '^ok ' "$TMP/writer.log" || true)
    s_more() { [ "$(grep -c '^ok ' "$TMP/writer.log" || true)" -ge $((w0 + $1)) ]; }
    wait_for 30 s_more "$1" || fail "the writer committed fewer than $1 rows more: $(tail -3 "$TMP/writer.log")"
}
pg_writer_stop() { sc_stop writer "$PG_WRITER" "$TMP/writer.err"; }
pg_watch_start() {
    # shellcheck disable=SC2046 # (pg_apis: words)
    "$PGPY" "$PGLIB/watch.py" watch --api $(pg_apis) --out "$TMP/rounds.jsonl" 2>>"$TMP/watch.err" &
    PG_WATCH=$!
    PG_PIDS+=("$PG_WATCH")
}
pg_watch_stop() { sc_stop watch "$PG_WATCH" "$TMP/watch.err"; }

# pg_rows: every row of t, through the leader, in $TMP/rows
pg_rows() {
    "$PGPY" -c 'import psycopg2, sys
c = psycopg2.connect(sys.argv[1]); cur = c.cursor(); cur.execute("SELECT n FROM t ORDER BY n")
print("\n".join(str(r[0]) for r in cur.fetchall()))' "$PG_DSN" >"$TMP/rows" || fail "cannot read the rows back"
}

# pg_report [--streaming-after]: watch.py report (figures on stdout: PG_FIGURES), or the
# test fails naming every violation
pg_report() {
    : >>"$TMP/probes.jsonl"
    PG_FIGURES=$("$PGPY" "$PGLIB/watch.py" report --rounds "$TMP/rounds.jsonl" --probes "$TMP/probes.jsonl" \
        --writer "$TMP/writer.log" --rows "$TMP/rows" "$@" 2>"$TMP/report.err") ||
        fail "$(cat "$TMP/report.err")"
}
