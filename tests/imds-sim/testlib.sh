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
