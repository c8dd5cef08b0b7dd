#!/usr/bin/env bash
# Benchmark (by hand, not in the suite; root, network namespaces, the packages of
# deploy/install-deps.sh --test): what a Reboot rollout over three fault domains costs a
# three-member Patroni cluster (Patroni 3.0.2, PostgreSQL 15, one etcd 3.4: the set of
# tests/real/real_patroni.sh, tests/real/patroni/lib.sh), with a writer inserting a row every
# 100 ms through host=a,b,c target_session_attrs=read-write:
#   a  schedcoord and the patroni hook: an agent and a coordinator per VM; the hook switches
#      the primary over before its VM's impact and waits after it until the replica streams;
#      each event approved once its domain is drained;
#   b  Azure alone: no agent, no hook; each event starts at its NotBefore (NOTICE simulated s
#      after the previous domain, x100); Patroni fails over by its TTL.
# At each impact imds-sim's --on-impact kills the VM's Patroni and PostgreSQL (kill -9) and
# starts them again IMPACT s later (a reboot); each run ends once all three members stream.
# Runs, each in a cluster of its own: a and b with the shortened timings of the test (ttl 15,
# loop_wait 1, retry_timeout 5), a and b with Patroni's defaults (ttl 30, loop_wait 10,
# retry_timeout 10).
#   tests/bench/patroni_rollout.sh [BUILD_DIR=build-bench] [IMPACT_S=30] [NOTICE_SIM_S=1000]
# Figures, from the writer's log and the simulator's timeline (tests/real/patroni/watch.py):
#   no primary   seconds without a successful write: the sum of the gaps over 0.5 s between
#                two committed rows (longest gap in brackets)
#   failed       write attempts that failed (no writable host, or the INSERT/COMMIT raised)
#   lost         rows whose COMMIT returned and that are not there at the end
#   makespan     from the maintenance request to all three members streaming again (s)
#   impacts on the primary   impacts that began while the VM's PostgreSQL was the primary
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build-bench}
IMPACT=${2:-30}
NOTICE=${3:-1000}
cd "$ROOT"
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSC_SANITIZE=OFF >/dev/null
fi
cmake --build "$BUILD" -j2 --target schedcoord-agent schedcoord-coordinator schedcoordctl imds-sim >/dev/null
export SC_BIN=$ROOT/$BUILD/bin SC_SRC=$ROOT

# run MODE TTL LOOP_WAIT RETRY_TIMEOUT: one rollout, its figures as one line "RESULT ..."
run() {
    local mode=$1
    export SC_TMP
    SC_TMP=$(mktemp -d /tmp/sc-bench-patroni.XXXXXX)
    (
        . "$ROOT/tests/integration/coord/lib.sh"
        . "$ROOT/tests/integration/coord/netns.sh"
        . "$ROOT/tests/real/patroni/lib.sh"
        HOOK=$ROOT/deploy/hooks/patroni
        PG_TTL=$2 PG_LOOP_WAIT=$3 PG_RETRY_TIMEOUT=$4
        ns_setup 3
        pg_setup
        sim_start --vms 3 --fault-domains 3 --time-scale 100 --complete-after 100 --on-impact "$(pg_platform_cmd)"
        notice=$NOTICE
        if [ "$mode" = a ]; then
            ns_start --voters 1
            seen() { [ "$(cst vm_0 | jq '[.members[] | select(.alive and .fault_domain >= 0)] | length')" = 3 ]; }
            wait_for 30 seen || fail "members not seen"
            notice=90000 # (every event ours to approve)
        fi
        pg_watch_start
        pg_writer_start
        t1=$(date +%s.%N)
        curl -sS -f -d "{\"EventType\":\"Reboot\",\"NoticeSeconds\":$notice,\"DurationInSeconds\":$((IMPACT * 100))}" \
            "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
        wait_for 900 completed_ge 3 || fail "rollout not complete"
        [ "$mode" = b ] || wait_for 300 hooks_settled || fail "hooks did not settle"
        wait_for 300 pg_all_streaming || fail "not all back and streaming"
        t2=$(date +%s.%N)
        pg_writer_more 5
        pg_writer_stop
        pg_watch_stop
        pg_rows
        fig=$("$PGPY" "$PGLIB/watch.py" report --rounds "$TMP/rounds.jsonl" --probes "$TMP/probes.jsonl" \
            --writer "$TMP/writer.log" --rows "$TMP/rows" 2>"$TMP/report.err" || true)
        onprim=$(grep -c "ran as the primary" "$TMP/report.err" || true)
        echo "RESULT $mode $2/$3/$4 $(jq -r --arg ms "$(echo "$t2 - $t1" | bc)" --arg p "$onprim" \
            '"\(.total_gap_s) (\(.longest_gap_s)) \(.failed_attempts) \(.lost)/\(.committed) \($ms | tonumber | round) \($p)"' <<<"$fig")"
    ) | grep '^RESULT' || { echo "RESULT $mode $2/$3/$4 failed: see $SC_TMP" && return 0; }
    rm -rf "$SC_TMP"
}

{
    run a 15 1 5
    run b 15 1 5
    run a 30 10 10
    run b 30 10 10
} | tee /dev/stderr | awk -v impact="$IMPACT" -v notice="$NOTICE" '
    BEGIN { print "Reboot over 3 fault domains, " impact " s down per VM; b: NotBefore " notice " sim s (x100) after each domain"
            print ""
            print "| run | ttl/loop_wait/retry_timeout | s without a primary (longest) | failed writes | committed rows lost | makespan s | impacts on the primary |"
            print "|---|---|---|---|---|---|---|" }
    { m = $2 == "a" ? "a: schedcoord + patroni hook" : "b: Azure alone (no hooks)"
      if ($4 == "failed:") { print "| " m " | " $3 " | " $0 " |||||"; next }
      print "| " m " | " $3 " | " $4 " " $5 " | " $6 " | " $7 " | " $8 " | " $9 " |" }'
