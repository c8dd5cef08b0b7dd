# Helpers for the imds-sim integration tests (tests/integration/imds_sim_*.sh). Sourced.
# Starts the simulator on an ephemeral port (--listen 127.0.0.1:0; it prints the port),
# always kills it on exit, and fails the test if it exits non-zero (e.g. ASan leaks).
set -euo pipefail
SIM="${SC_BIN:-build/bin}/imds-sim"
TMP="${SC_TMP:-$(mktemp -d)}"
mkdir -p "$TMP"
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY
export NO_PROXY='*' no_proxy='*'
SIM_PID=""
V=2020-07-01

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok   $*"; }

sim_start() {
    local out="$TMP/sim.out"
    : >"$out"
    "$SIM" --listen 127.0.0.1:0 "$@" >"$out" 2>>"$TMP/sim.err" &
    SIM_PID=$!
    for _ in $(seq 200); do
        grep -q '^listening on ' "$out" && break
        kill -0 "$SIM_PID" 2>/dev/null || fail "imds-sim exited at start: $(tail -3 "$TMP/sim.err")"
        sleep 0.05
    done
    PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out" | head -1)
    [ -n "$PORT" ] || fail "imds-sim printed no port"
    B="http://127.0.0.1:$PORT"
}

sim_stop() {
    local rc=0
    [ -n "$SIM_PID" ] || return 0
    kill "$SIM_PID" 2>/dev/null || true
    wait "$SIM_PID" || rc=$?
    SIM_PID=""
    [ "$rc" -eq 0 ] || fail "imds-sim exited with $rc: $(tail -20 "$TMP/sim.err")"
}

s_cleanup() {
    if [ -n "$SIM_PID" ]; then kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; fi
}
trap s_cleanup EXIT

# imds VM [api-version] -> the document
imds() { curl -sS -H Metadata:true "$B/$1/metadata/scheduledevents?api-version=${2:-$V}"; }
# code ARGS... -> the HTTP status (000 when no answer)
code() { curl -s -o /dev/null -w '%{http_code}' "$@" || true; }
# approve VM ID [api-version] -> HTTP status
approve() {
    code -H Metadata:true -d "{\"StartRequests\":[{\"EventId\":\"$2\"}]}" \
        "$B/$1/metadata/scheduledevents?api-version=${3:-$V}"
}
# create JSON -> EventId
create() { curl -sS -f -d "$1" "$B/control/events" | jq -r .EventId; }
state() { curl -sS "$B/control/state"; }
# ev_field ID FIELD|JQ-EXPR -> a field (or a jq expression) of the event in /control/state
ev_field() {
    local e="$2"
    case "$e" in .* | \[*) ;; *) e=".$e" ;; esac
    state | jq -r --arg id "$1" ".events[] | select(.EventId == \$id) | $e"
}
timeline() { curl -sS "$B/control/timeline"; }
# wait_for SECONDS CMD... -> polls CMD every 0.1 s until it succeeds
wait_for() {
    local t=$1; shift
    local end=$(( $(date +%s%N) / 1000000 + ${t%.*} * 1000 ))
    until "$@"; do
        [ $(( $(date +%s%N) / 1000000 )) -lt $end ] || return 1
        sleep 0.1
    done
}
eq() { [ "$1" == "$2" ] || fail "$3: expected [$2], got [$1]"; }
