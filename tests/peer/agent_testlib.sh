# Helpers for the agent's integration tests (tests/integration/agent_*.sh). Sourced.
# Starts imds-sim, the test peer (sc-agent-peer, a coordinator stand-in) and agents; kills
# everything it started on exit; fails the test when a program exits with an error
# (e.g. an ASan report).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

sc_on_fail() {
    local f
    for f in "$TMP"/*.err; do echo "--- $f"; tail -25 "$f"; done
}
sc_on_exit() {
    # hooks left behind by a kill -9'd agent write their pid here
    local f
    for f in "$TMP"/hook-*.pid; do [ -f "$f" ] && kill -9 -- "-$(cat "$f")" 2>/dev/null || true; done
}

# sim_start ARGS... -> $SIM_PID, $PORT, $B (base URL)
sim_start() { sc_sim_start "$@"; }

# sim_event JSON -> EventId
sim_event() {
    curl -sS -X POST -H 'Content-Type: application/json' -d "$1" "$B/control/events" | jq -r .EventId
}

# peer_start NAME [BIND] [extra args] -> $PEER_PID, $PEER_PORT; log $TMP/peer.log, cmds $TMP/cmds
peer_start() {
    local name=$1 bind=${2:-tcp://127.0.0.1:*}
    shift 2 || shift $#
    : >>"$TMP/cmds"
    local before n
    before=$(cat "$TMP/peer.log" 2>/dev/null | grep -c '"peer":"ready"' || true)
    "$BIN/sc-agent-peer" --bind "$bind" --name "$name" --log "$TMP/peer.log" --cmds "$TMP/cmds" \
        "$@" 2>>"$TMP/peer.err" &
    PEER_PID=$!
    PIDS+=("$PEER_PID")
    for _ in $(seq 100); do
        n=$(cat "$TMP/peer.log" 2>/dev/null | grep -c '"peer":"ready"' || true)
        [ "${n:-0}" -gt "${before:-0}" ] && break
        sleep 0.05
    done
    PEER_PORT=$(grep '"peer":"ready"' "$TMP/peer.log" | tail -1 | jq -r .endpoint | sed 's/.*://')
    [ -n "$PEER_PORT" ] || fail "peer did not start"
}

cmd() { echo "$*" >>"$TMP/cmds"; }

# A hook that records each run in $TMP/hooks.log and sleeps $TMP/hook_sleep seconds.
make_hook() {
    cat >"$TMP/hook.sh" <<HOOK
#!/bin/sh
echo \$\$ > "$TMP/hook-\$\$.pid"
ev=\$(cat)
echo "\$SCHEDCOORD_PHASE \$SCHEDCOORD_EVENT_ID \$SCHEDCOORD_ORIGIN vm=\$SCHEDCOORD_VM type=\$SCHEDCOORD_EVENT_TYPE res=\$SCHEDCOORD_RESOURCES json=\$ev attempt=\$SCHEDCOORD_ATTEMPT prepared=\${SCHEDCOORD_PREPARED-}" >> "$TMP/hooks.log"
sleep \$(cat "$TMP/hook_sleep" 2>/dev/null || echo 0)
rm -f "$TMP/hook-\$\$.pid"
HOOK
    chmod +x "$TMP/hook.sh"
    : >"$TMP/hooks.log"
}

# agent_start VM ARGS... -> $AGENT_PID (log $TMP/agent.err, or $AGENT_ERR when set); it
# heartbeats every second (the tests watch heartbeats; ARGS may say otherwise), or at its
# default with AGENT_FAST_HB=0
agent_start() {
    local vm=$1
    shift
    # shellcheck disable=SC2046 # no flag or two words
    "$BIN/schedcoord-agent" --imds-url "$B/$vm" --state-dir "$TMP/state-$vm" \
        --prepare-hook "$TMP/hook.sh" --recover-hook "$TMP/hook.sh" \
        $([ "${AGENT_FAST_HB:-1}" = 0 ] || echo --heartbeat-interval 1) "$@" \
        2>>"${AGENT_ERR:-$TMP/agent.err}" &
    AGENT_PID=$!
    PIDS+=("$AGENT_PID")
}

# agent_stop: SIGTERM, and the exit status must be 0 (clean, no sanitizer report)
agent_stop() { sc_stop agent "$AGENT_PID"; }

# count JQ_FILTER -> number of peer.log lines matching (select(FILTER))
count() { jq -c "select($1)" "$TMP/peer.log" 2>/dev/null | wc -l; }

count_at_least() { [ "$(count "$1")" -ge "$2" ]; }

# wait_for SECONDS JQ_FILTER [N] : until at least N (default 1) lines match
wait_for() {
    local t=$1 f=$2 n=${3:-1}
    sc_wait_until "$t" count_at_least "$f" "$n" || fail "timed out waiting for $n of: $f (have $(count "$f"))"
}
