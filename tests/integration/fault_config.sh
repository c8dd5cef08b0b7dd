#!/usr/bin/env bash
# Bad configuration of every program (agent, coordinator, schedcoordctl, imds-sim): an unknown
# flag, a bad value, a missing value, a missing required flag, a config file with an unknown
# key or a bad line -> exit 2 with a message naming the key and the expected form, without
# starting anything. --help exits 0 and lists every key; every key listed is accepted in a
# config file (and a bad value there is refused naming it).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
N=0

# expect RC PATTERN PROGRAM ARGS...: runs it (it must end by itself: a program that started
# despite a bad config would run for ever; 30 s, because CI once saw a sanitized build take
# over 5 s to exit on a loaded machine after printing its refusal), checks the exit status
# and that stderr (+stdout) matches the extended regex PATTERN.
expect() {
    local want=$1 pat=$2 rc=0
    shift 2
    timeout 30 "$@" >"$TMP/out" 2>"$TMP/err" </dev/null || rc=$?
    [ "$rc" -ne 124 ] || fail "$* did not stop by itself (started despite bad config?)"
    [ "$rc" -eq "$want" ] || fail "$*: exit $rc, expected $want: $(head -3 "$TMP/err")"
    grep -Eq -- "$pat" "$TMP/err" "$TMP/out" || fail "$*: message does not match /$pat/: $(head -3 "$TMP/err")"
    if [ "$want" -ne 0 ]; then
        # a short message, not a sanitizer report or a crash
        ! grep -q 'AddressSanitizer\|runtime error\|Segmentation' "$TMP/err" || fail "$*: crashed"
    fi
    N=$((N + 1))
}

# A port nobody listens on: the programs must refuse the config before any network use.
AG=(--imds-url http://127.0.0.1:9/vm_0 --members vm_0=127.0.0.1:9 --state-dir "$TMP/a"
    --prepare-hook /bin/true --recover-hook /bin/true --insecure --name vm_0)
CO=(--name vm_0 --imds-url http://127.0.0.1:9/vm_0 --members vm_0=127.0.0.1:9
    --state-dir "$TMP/c" --insecure)

for prog in schedcoord-agent schedcoord-coordinator; do
    if [ "$prog" = schedcoord-agent ]; then BASE=("${AG[@]}"); else BASE=("${CO[@]}"); fi
    P="$BIN/$prog"
    expect 2 'unknown option "--bogus"' "$P" "${BASE[@]}" --bogus
    expect 2 '^[^ ]+: --heartbeat-interval|--dead-after' "$P" "${BASE[@]}" \
        $([ "$prog" = schedcoord-agent ] && echo --heartbeat-interval || echo --dead-after) abc
    expect 2 '"abc" is not a number of seconds \(expected e\.g\.' "$P" "${BASE[@]}" \
        $([ "$prog" = schedcoord-agent ] && echo --hook-timeout || echo --resend) abc
    expect 2 'out of range \(expected [0-9]+\.\.[0-9]+' "$P" "${BASE[@]}" \
        $([ "$prog" = schedcoord-agent ] && echo --hook-timeout 0 || echo --max-fault-domains 0)
    expect 2 '--log-level: "loud" is not (a level \(expected |one of )debug' "$P" "${BASE[@]}" --log-level loud
    expect 2 '--insecure: "maybe" is not true/false' "$P" "${BASE[@]}" --insecure=maybe
    expect 2 'missing value' "$P" "${BASE[@]}" --log-level
    expect 2 '--insecure: cannot be combined with --key / --keys' "$P" "${BASE[@]}" \
        --key "$TMP/none.key" --keys "$TMP/none.keys"
    expect 2 "--insecure: member vm_1's endpoint tcp://10.0.0.5:7700 is not on this machine" \
        "$P" "${BASE[@]}" --members vm_0=127.0.0.1:9,vm_1=10.0.0.5:7700
    expect 2 '--members: (entry 1 )?"garbage" is not NAME=HOST:PORT' "$P" "${BASE[@]}" --members garbage
    expect 2 'missing required setting "members" \(--members VALUE, or members = VALUE' \
        "$P" --name vm_0 --state-dir "$TMP/x" --imds-url http://127.0.0.1:9
    expect 2 'missing required setting "state-dir"|missing required setting "state_dir"' \
        "$P" --name vm_0 --members vm_0=127.0.0.1:9 --imds-url http://127.0.0.1:9 \
        $([ "$prog" = schedcoord-agent ] && echo --prepare-hook /bin/true --recover-hook /bin/true)
    printf 'log-level = info\nbogus_key = 3\n' >"$TMP/c1.conf"
    expect 2 'c1.conf line 2: unknown key "bogus_key"' "$P" "${BASE[@]}" --config "$TMP/c1.conf"
    printf '# comment\n\nlog-level info\n' >"$TMP/c2.conf"
    expect 2 'c2.conf line 3: expected "key = value", got "log-level info"' "$P" "${BASE[@]}" \
        --config "$TMP/c2.conf"
    # a shared file: the other program's section is skipped, an unknown one refused
    printf 'log-level = info\n[agent]\nhook-timeout = 3\n[coordinator]\nmin-healthy = 1\n[other]\n' >"$TMP/c5.conf"
    expect 2 'c5.conf line 6: unknown section \[other\]' "$P" "${BASE[@]}" --config "$TMP/c5.conf"
    printf '[section]\n' >"$TMP/c3.conf"
    expect 2 'c3.conf line 1: unknown section \[section\] \(expected \[agent\] or \[coordinator\]\)' "$P" "${BASE[@]}" --config "$TMP/c3.conf"
    expect 2 "--config $TMP/nonexistent.conf: cannot read: No such file" "$P" "${BASE[@]}" \
        --config "$TMP/nonexistent.conf"
    head -c 3000 /dev/urandom >"$TMP/c4.conf"
    expect 2 'c4.conf line [0-9]+' "$P" "${BASE[@]}" --config "$TMP/c4.conf"
    # --help: exit 0, every key; each key is a config-file key (a bad value there is refused
    # by name, a good one is accepted: the set of keys of --help is the set of the file)
    expect 0 'Options' "$P" --help
    accepted=""
    keys=$(sed -n 's/^  --\([a-z0-9-]*\).*/\1/p' "$TMP/out" | grep -v '^config$\|^help$')
    [ "$(echo "$keys" | wc -l)" -ge 8 ] || fail "$prog --help lists too few keys: $keys"
    for k in $keys; do
        # a key also given on the command line (which wins over the file) may take @bad@:
        # the program would start and run, so it is not started
        if [[ " ${BASE[*]} " == *" --$k "* ]]; then
            accepted+=" $k"
            continue
        fi
        printf '%s = @bad@\n' "$k" >"$TMP/k.conf"
        rc=0
        # 30 s: a refusal is quick, but a sanitized build on a loaded machine once took
        # seconds to exit; a program that accepted @bad@ runs on and is stopped here
        timeout 30 "$P" "${BASE[@]}" --config "$TMP/k.conf" >/dev/null 2>"$TMP/err" </dev/null || rc=$?
        [ "$rc" -eq 2 ] || fail "$prog: config file '$k = @bad@' not refused (exit $rc): $(head -3 "$TMP/err")"
        # (--key/--keys with --insecure: refused as a combination, naming --insecure)
        grep -q -- "$k\|${k//-/_}\|--insecure: cannot be combined" "$TMP/err" || fail "$prog: config key $k refused without naming it: $(cat "$TMP/err")"
        ! grep -q 'unknown key' "$TMP/err" || fail "$prog: --help lists $k but the config file does not know it"
    done
    ok "$prog: bad flags, values, missing values, config files refused (exit 2) naming the key and the expected form; --help lists $(echo $keys | wc -w) keys, all known to the config file (free-form, took @bad@:$accepted)"
done

# A missing key file (the {name} of --key expanded) or keyring is a configuration error: exit
# 2 naming the file, not 1 (which a systemd unit would restart for ever).
# (the agent reads its key once IMDS told it its fault domain: a simulator answers)
: >"$TMP/ring"
sc_sim_start --vms 1 --fault-domains 1
expect 2 "$TMP/vm_0.key" "$BIN/schedcoord-agent" "${AG[@]/--insecure/--key=$TMP/{name\}.key}" \
    --keys "$TMP/ring" --imds-url "$B/vm_0"
sc_sim_stop
expect 2 "$TMP/vm_0.key" "$BIN/schedcoord-coordinator" "${CO[@]/--insecure/--key=$TMP/{name\}.key}" --keys "$TMP/ring"
"$BIN/schedcoordctl" keygen --name vm_0 --out "$TMP" >/dev/null || fail "keygen"
expect 2 "$TMP/none.ring" "$BIN/schedcoord-coordinator" "${CO[@]/--insecure/--key=$TMP/{name\}.key}" --keys "$TMP/none.ring"

# The hook paths of the agent are checked at start: a missing or non-executable hook is a
# configuration error (exit 2, naming the key), not a surprise at the first event.
expect 2 'prepare-hook.*/nonexistent/hook' "$BIN/schedcoord-agent" "${AG[@]}" --prepare-hook /nonexistent/hook
printf 'not executable\n' >"$TMP/noexec"
chmod 644 "$TMP/noexec"
expect 2 'recover-hook.*noexec.*not executable' "$BIN/schedcoord-agent" "${AG[@]}" --recover-hook "$TMP/noexec"
expect 2 '--api-version: "latest" is not an api-version \(expected YYYY-MM-DD' "$BIN/schedcoord-agent" "${AG[@]}" --api-version latest
ok "agent: a missing or non-executable hook, a bad api-version refused at start naming the key"

# Coordinator semantic checks
expect 2 'our name vm_9 \(--name, or else the compute metadata.s\) is not in --members' "$BIN/schedcoord-coordinator" "${CO[@]}" --name vm_9
expect 2 'min-healthy: "150%" is neither a count' "$BIN/schedcoord-coordinator" "${CO[@]}" --min-healthy 150%
expect 2 'approve-without-drain: "Bogus" is not a comma-separated list of Freeze' \
    "$BIN/schedcoord-coordinator" "${CO[@]}" --approve-without-drain Bogus
expect 2 'serialise-by: "rack" is not one of auto, fault_domain, update_domain, vm' \
    "$BIN/schedcoord-coordinator" "${CO[@]}" --serialise-by rack
ok "coordinator: policy values checked (member name, min-healthy, event types, serialise-by)"

# schedcoordctl
C="$BIN/schedcoordctl"
expect 2 'unknown option --bogus' "$C" --state-dir "$TMP/c" status --bogus
expect 2 '--state-dir DIR is required' "$C" status
expect 2 '--state-dir: missing value' "$C" status --state-dir
expect 2 'unknown command "explode"' "$C" --state-dir "$TMP/c" explode
expect 2 'no command given' "$C" --state-dir "$TMP/c"
expect 1 'cannot reach the coordinator \(is it running\?\) at .*control.sock' "$C" --state-dir "$TMP/c" status
expect 0 'status\|events\|history' "$C" --help
expect 0 'metrics \[--http\]' "$C" --help
expect 2 '--http is an option of metrics only' "$C" --state-dir "$TMP/c" status --http
expect 2 'metrics has no --json' "$C" --state-dir "$TMP/c" metrics --json
expect 1 'cannot reach the coordinator \(is it running\?\) at .*control.sock' "$C" --state-dir "$TMP/c" metrics
ok "schedcoordctl: usage errors exit 2 naming the problem; no daemon -> exit 1 saying so"

# imds-sim
S="$BIN/imds-sim"
expect 2 "unrecognized option '--bogus'" "$S" --listen 127.0.0.1:0 --vms 2 --fault-domains 1 --bogus
expect 2 '--vms: "0" is not a number from 1 to 10000' "$S" --listen 127.0.0.1:0 --vms 0 --fault-domains 1
expect 2 '--time-scale: "abc" is not a number' "$S" --listen 127.0.0.1:0 --vms 2 --fault-domains 1 --time-scale abc
expect 2 '--listen: expected ADDR:PORT, got "nowhere"' "$S" --listen nowhere --vms 2 --fault-domains 1
expect 2 '--listen, --vms and --fault-domains are required' "$S" --vms 2 --fault-domains 1
expect 0 'Usage' "$S" --help
for k in $(sed -n 's/^  --\([a-z0-9-]*\).*/\1/p' "$TMP/out"); do
    grep -q -- "--$k" "$SC_SRC/tests/imds-sim/README.md" 2>/dev/null || [ -z "${SC_SRC:-}" ] ||
        fail "imds-sim --help lists --$k, its README does not"
done
ok "imds-sim: bad options exit 2 naming the option; --help exits 0"

# Both daemons wait for IMDS compute metadata at start (the VM's name, its fault domain): an
# --imds-url the client refuses is a configuration error (exit 2), not a wait; an IMDS that
# does not answer usefully is waited for with backoff (its Retry-After honoured), and SIGTERM
# (systemctl stop) still ends that wait at once, not after it (18.9 s before the fix; the
# units' TimeoutStopSec is 30 s, and Retry-After may say up to that).
expect 2 '--imds-url: ' "$BIN/schedcoord-agent" "${AG[@]:2}" --imds-url 'http://127.0.0.1:9/vm_0?a'
expect 2 '--imds-url: ' "$BIN/schedcoord-coordinator" "${CO[@]:4}" --imds-url 'http://127.0.0.1:9/vm_0?a'
# an IMDS that answers 503 with Retry-After: 20 (honoured: the next try is 20 s away)
read -r IP <<<"$(free_ports 1)"
python3 - "$IP" 2>"$TMP/busy_imds.err" <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(503)
        self.send_header("Retry-After", "20")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
PIDS+=("$!")
sc_wait_until 10 curl -s -o /dev/null "http://127.0.0.1:$IP/" || fail "the busy IMDS did not start"
"$BIN/schedcoord-agent" "${AG[@]:2}" --imds-url "http://127.0.0.1:$IP/vm_0" 2>"$TMP/wait_a.err" &
ap=$!
"$BIN/schedcoord-coordinator" "${CO[@]:4}" --imds-url "http://127.0.0.1:$IP/vm_0" 2>"$TMP/wait_c.err" &
cp=$!
PIDS+=("$ap" "$cp")
waiting() { grep -q 'IMDS compute metadata not available yet' "$TMP/wait_a.err" &&
    grep -q 'IMDS compute metadata not available yet' "$TMP/wait_c.err"; }
sc_wait_until 20 waiting || fail "the daemons did not wait for IMDS: $(tail -2 "$TMP"/wait_?.err)"
sleep 1
t0=$(date +%s%N)
kill -TERM "$ap" "$cp"
wait "$ap" || fail "agent exit $? after SIGTERM in the IMDS wait: $(tail -3 "$TMP/wait_a.err")"
wait "$cp" || fail "coordinator exit $? after SIGTERM in the IMDS wait: $(tail -3 "$TMP/wait_c.err")"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 4000 ] || fail "SIGTERM during the IMDS wait took $ms ms to stop the daemons"
for f in wait_a wait_c; do
    grep -q 'retry_ms=20000' "$TMP/$f.err" || fail "$f: Retry-After not honoured: $(head -3 "$TMP/$f.err")"
    grep -q 'stopped before IMDS answered' "$TMP/$f.err" || fail "$f: $(tail -3 "$TMP/$f.err")"
done
ok "IMDS identity: a refused URL exits 2; a silent IMDS is waited for, and SIGTERM ends the wait in $ms ms"
echo "ok   $N cases"
