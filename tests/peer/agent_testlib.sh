# Helpers for the agent's integration tests (tests/integration/agent_*.sh). Sourced.
# Starts imds-sim, the test peer (sc-agent-peer, a coordinator stand-in) and agents; kills
# everything it started on exit; fails the test when a program exits with an error
# (e.g. an ASan report).
set -euo pipefail
BIN="${SC_BIN:-build/bin}"
TMP="${SC_TMP:-$(mktemp -d)}"
rm -rf "$TMP"
mkdir -p "$TMP"
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY
export NO_PROXY='*' no_proxy='*'
PIDS=()

fail() {
    echo "FAIL: $*" >&2
    for f in "$TMP"/*.err; do echo "--- $f" >&2; tail -25 "$f" >&2; done
    exit 1
}
ok() { echo "ok   $*"; }

s_cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    # hooks left behind by a kill -9'd agent write their pid here
    for f in "$TMP"/hook-*.pid; do [ -f "$f" ] && kill -9 -- "-$(cat "$f")" 2>/dev/null || true; done
}
trap s_cleanup EXIT

# sim_start ARGS... -> $SIM_PID, $PORT, $B (base URL)
sim_start() {
    "$BIN/imds-sim" --listen 127.0.0.1:0 "$@" >"$TMP/sim.out" 2>>"$TMP/sim.err" &
    SIM_PID=$!
    PIDS+=("$SIM_PID")
    for _ in $(seq 200); do
        grep -q '^listening on ' "$TMP/sim.out" && break
        sleep 0.05
    done
    PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/sim.out" | head -1)
    [ -n "$PORT" ] || fail "imds-sim did not start"
    B="http://127.0.0.1:$PORT"
}

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
echo "\$SCHEDCOORD_PHASE \$SCHEDCOORD_EVENT_ID \$SCHEDCOORD_ORIGIN vm=\$SCHEDCOORD_VM type=\$SCHEDCOORD_EVENT_TYPE res=\$SCHEDCOORD_RESOURCES json=\$ev" >> "$TMP/hooks.log"
sleep \$(cat "$TMP/hook_sleep" 2>/dev/null || echo 0)
rm -f "$TMP/hook-\$\$.pid"
HOOK
    chmod +x "$TMP/hook.sh"
    : >"$TMP/hooks.log"
}

# agent_start VM ARGS... -> $AGENT_PID (log $TMP/agent.err)
agent_start() {
    local vm=$1
    shift
    "$BIN/schedcoord-agent" --imds-url "$B/$vm" --state-dir "$TMP/state-$vm" \
        --prepare-hook "$TMP/hook.sh" --recover-hook "$TMP/hook.sh" "$@" 2>>"$TMP/agent.err" &
    AGENT_PID=$!
    PIDS+=("$AGENT_PID")
}

# agent_stop: SIGTERM, and the exit status must be 0 (clean, no sanitizer report)
agent_stop() {
    local rc=0
    kill "$AGENT_PID" 2>/dev/null || true
    wait "$AGENT_PID" || rc=$?
    [ "$rc" -eq 0 ] || fail "agent exited with $rc"
}

# count JQ_FILTER -> number of peer.log lines matching (select(FILTER))
count() { jq -c "select($1)" "$TMP/peer.log" 2>/dev/null | wc -l; }

# wait_for SECONDS JQ_FILTER [N] : until at least N (default 1) lines match
wait_for() {
    local t=$1 f=$2 n=${3:-1}
    for _ in $(seq $((t * 10))); do
        [ "$(count "$f")" -ge "$n" ] && return 0
        sleep 0.1
    done
    fail "timed out waiting for $n of: $f (have $(count "$f"))"
}
