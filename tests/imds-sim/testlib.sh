# Helpers for the imds-sim integration tests (tests/integration/imds_sim_*.sh). Sourced.
# Starts the simulator on an ephemeral port (--listen 127.0.0.1:0; it prints the port),
# always kills it on exit, and fails the test if it exits non-zero (e.g. ASan leaks).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
V=2020-07-01

sim_start() { sc_sim_start "$@"; }
sim_stop() { sc_sim_stop; }

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
wait_for() { sc_wait_until "$@"; }
eq() { [ "$1" == "$2" ] || fail "$3: expected [$2], got [$1]"; }

# Azure's Python sample (tests/imds-sim/azure_advanced_sample.py; imds_sim_azure_sample*.sh).
# sample_python: PYTHON, the first python3 that has requests: PATH's, else Debian's.
sample_python() {
    local p
    PYTHON=""
    for p in python3 /usr/bin/python3; do
        if command -v "$p" >/dev/null && "$p" -c 'import requests' 2>/dev/null; then PYTHON=$p; break; fi
    done
    [ -n "$PYTHON" ] || fail "no python3 with requests (deploy/install-deps.sh --test installs python3-requests)"
}
# sample_run SCRIPT RESOURCES: the sample's dialogue. A platform Freeze of 30 s on vm_1 (pf),
# which the sample only logs; then a user Reboot of RESOURCES (a JSON array; ue), which it
# approves; then it exits. Nothing here runs against a clock (the Freeze's notice is 15
# minutes, the Reboot waits for the approval): the bounds only wait for a python that a loaded
# machine starts slowly (no prompt after 10 s at load 15 on 2 cores), and decide nothing.
sample_run() {
    local fifo="$TMP/stdin" out="$TMP/sample.out"
    pf=$(create '{"EventType":"Freeze","Resources":["vm_1"],"NoticeSeconds":900,"DurationInSeconds":30}')
    rm -f "$fifo"
    mkfifo "$fifo"
    "$PYTHON" -u "$1" <"$fifo" >"$out" 2>"$TMP/sample.err" &
    PY=$!
    exec 3>"$fifo"
    trap '{ exec 3>&-; } 2>/dev/null || true; kill $PY 2>/dev/null || true; sc_cleanup' EXIT
    wait_for 60 grep -q 'Press 1' "$out" || fail "sample did not start: $(cat "$out" "$TMP/sample.err")"
    echo 1 >&3 # "Press 1 to poll for new events"
    wait_for 60 grep -q 'Processed events from document: 2' "$out" || fail "sample did not process document 2: $(cat "$out" "$TMP/sample.err")"
    grep -q 'memory-preserving Live Migration' "$out" || fail "sample did not log the Freeze"
    ok "the sample sees the platform event (logs its Description)"
    echo 1 >&3 # poll again: the sample waits for a new DocumentIncarnation
    ue=$(create "{\"EventType\":\"Reboot\",\"EventSource\":\"User\",\"Resources\":$2,\"NoticeSeconds\":900,\"DurationInSeconds\":60}")
    wait_for 60 grep -q 'Processed events from document: 3' "$out" || fail "sample did not process document 3: $(cat "$out" "$TMP/sample.err")"
    echo 2 >&3 # "Press 2 to exit"
    exec 3>&-
    wait $PY || fail "sample exited with $?: $(cat "$TMP/sample.err")"
}
# sample_checked VM IMPACTED: ue started by one approval POST of VM's (the sample's), impacting
# IMPACTED (comma-separated); pf left Scheduled
sample_checked() {
    eq "$(ev_field "$ue" EventStatus)" Started "user Reboot started by the sample's approval"
    eq "$(ev_field "$ue" started_how)" approved "how"
    eq "$(ev_field "$ue" '[.approvals[].vm] | join(",")')" "$1" "approved by the sample's VM, $1"
    eq "$(ev_field "$ue" '[.impacts[].vm] | join(",")')" "$2" "impact on every VM in Resources"
    eq "$(timeline | jq -r --arg id "$ue" --arg vm "$1" '[.[] | select(.kind == "post" and .vm == $vm and .status == 200 and (.events | index($id)))] | length')" 1 "one POST by the sample"
    eq "$(ev_field "$pf" EventStatus)" Scheduled "the platform Freeze (30 s) was not approved"
}
