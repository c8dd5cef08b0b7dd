# Helpers for the coordinator end-to-end tests (tests/integration/coord_*.sh). Sourced.
#
# One availability set on loopback: imds-sim (ephemeral port), N agents (--insecure, or CURVE
# keys after keys_make; each with a prepare and a recover hook that log "start|end PHASE VM
# EVENT TIME" to hooks.log, "PHASE VM EVENT prepared=P attempt=A json=STDIN" to hookenv.log,
# and sleep a little), one coordinator (member vm_0). Everything is killed on exit; a daemon
# that exits non-zero (ASan, leaks) fails the test.
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/common.sh"
# Leaks of a process killed by a signal are not worth reporting; a clean exit must be clean.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"

COORD_PID=""
AGENT_PIDS=()
HOOKLOG="$TMP/hooks.log"
HOOKENV="$TMP/hookenv.log"
TL="$TMP/timeline.jsonl"
: >"$HOOKLOG"

sc_on_fail() {
    echo "--- coordinator log (tail)"
    tail -30 "$TMP/coord.err" 2>/dev/null || true
}
sc_on_exit() { sc_kill "${AGENT_PIDS[@]}" "$COORD_PID"; }

# wait_for SECONDS CMD... -> polls CMD (its stderr dropped) every 0.1 s until it succeeds
wait_for() { sc_wait_until "$@" 2>/dev/null; }

# sim_start ARGS... (after --listen): sets PORT, B
sim_start() { sc_sim_start --timeline "$TL" "$@"; }

# write_hook I SLEEP [FAIL_PHASE] [PREPARE_LAST]: vm_I's hook logs to hooks.log, sleeps SLEEP s,
# and exits 1 in FAIL_PHASE (prepare or recover; "none"); a prepare runs the shell command
# PREPARE_LAST just before its end line. Read at each run: may be rewritten while agents run.
write_hook() {
    cat >"$TMP/agent_$1/hook.new" <<HOOK
#!/bin/sh
echo "start \$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID \$(date +%s.%N)" >>"$HOOKLOG"
echo "\$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID prepared=\${SCHEDCOORD_PREPARED-} attempt=\$SCHEDCOORD_ATTEMPT json=\$(cat)" >>"$HOOKENV"
sleep $2
[ "\$SCHEDCOORD_PHASE" != prepare ] || ${4:-true}
echo "end \$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID \$(date +%s.%N)" >>"$HOOKLOG"
[ "\$SCHEDCOORD_PHASE" != "${3:-none}" ] || exit 1
HOOK
    chmod +x "$TMP/agent_$1/hook.new"
    mv "$TMP/agent_$1/hook.new" "$TMP/agent_$1/hook"
}

# sec_args NAME: --insecure, or NAME's CURVE key and the keyring when KEYDIR is set (made by
# keys_make)
sec_args() {
    if [ -n "${KEYDIR:-}" ]; then
        echo "--key $KEYDIR/$1.key --keys $KEYDIR/keyring"
    else
        echo "--insecure"
    fi
}

# keys_make N: CURVE key pairs for vm_0 .. vm_{N-1} in KEYDIR and their keyring
keys_make() {
    local i
    KEYDIR="$TMP/keys"
    mkdir -p "$KEYDIR"
    : >"$KEYDIR/keyring"
    for ((i = 0; i < $1; i++)); do
        "$SC_BIN/schedcoordctl" keygen --name "vm_$i" --out "$KEYDIR" >>"$KEYDIR/keyring" ||
            fail "keygen vm_$i"
    done
}

# set_start N: MEMBERS for N VMs (vm_0 .. vm_{N-1}), hooks, N agents
set_start() {
    local n=$1 i ports
    read -r -a ports <<<"$(free_ports "$n")"
    MEMBERS=""
    for ((i = 0; i < n; i++)); do
        MEMBERS+="${MEMBERS:+,}vm_$i=127.0.0.1:${ports[$i]}"
    done
    for ((i = 0; i < n; i++)); do
        mkdir -p "$TMP/agent_$i"
        write_hook "$i" "${HOOK_SLEEP:-0.3}"
        # shellcheck disable=SC2046 # sec_args prints separate words
        "$SC_BIN/schedcoord-agent" --name "vm_$i" --imds-url "$B/vm_$i" --members "$MEMBERS" \
            --state-dir "$TMP/agent_$i" --prepare-hook "$TMP/agent_$i/hook" \
            --recover-hook "$TMP/agent_$i/hook" $(sec_args "vm_$i") --poll-interval "${POLL:-0.5}" \
            --standalone-after 600 --hook-timeout 30 --log-level warn \
            >"$TMP/agent_$i.out" 2>"$TMP/agent_$i.err" &
        AGENT_PIDS+=($!)
    done
}

# coord_start [extra flags]: the coordinator of vm_0
coord_start() {
    "$SC_BIN/schedcoord-coordinator" --name vm_0 --imds-url "$B/vm_0" --members "$MEMBERS" \
        --state-dir "$TMP/coord" $(sec_args vm_0) --deadline-margin-s 1 "$@" \
        >>"$TMP/coord.out" 2>>"$TMP/coord.err" &
    COORD_PID=$!
    # (after a kill -9 the old socket file is still there: wait for an answer)
    wait_for 10 ctl_quiet status || fail "coordinator did not start"
}

coord_stop() { # clean stop: must exit 0 (ASan clean)
    sc_stop coordinator "$COORD_PID"
    COORD_PID=""
}

ctl() { "$SC_BIN/schedcoordctl" --state-dir "$TMP/coord" "$@"; }
ctl_quiet() { ctl "$@" >/dev/null 2>&1; }

# all_members_seen N: status shows N alive members with a fault domain
all_members_seen() {
    [ "$(ctl status --json | jq "[.members[] | select(.alive and .fault_domain >= 0)] | length")" -eq "$1" ]
}

# completed_ge N: the simulator's timeline has at least N "completed" facts (only the kind
# field counts: a "completed" elsewhere on a line is no completion)
completed_ge() { [ "$(grep -c '"kind": *"completed"' "$TL" 2>/dev/null || true)" -ge "$1" ]; }

hooks_settled() { # every start has its end, and every prepared VM recovered (a VM impacted
    # without a prepare recovers too: more recovers than prepares is fine)
    awk '$1 == "start" { s++ } $1 == "end" { e++ }
         $1 == "end" && $2 == "prepare" { p[$3 " " $4] = 1; np++ }
         $1 == "end" && $2 == "recover" { r[$3 " " $4] = 1 }
         END { for (k in p) if (!(k in r)) exit 1; exit !(s == e && np > 0) }' "$HOOKLOG"
}

# new_event JSON: creates an event in the simulator, prints its EventId
new_event() {
    curl -sS -f -d "$1" "$B/control/events" | jq -r .EventId
}

# tl_count FILTER: timeline facts matching a jq boolean FILTER
tl_count() { jq -c "select($1)" "$TL" | wc -l; }
# ev_over ID...: the simulator says every event ID completed or was cancelled
ev_over() {
    local id
    for id in "$@"; do
        [ "$(tl_count "(.kind == \"completed\" or .kind == \"cancelled\") and .event == \"$id\"")" -ge 1 ] || return 1
    done
}
# hist FILTER: decision-log entries (ctl history --json) matching a jq boolean FILTER
hist() { ctl history --json | jq -c ".[] | select($1)"; }
# hist_has FILTER: some decision-log entry matches
hist_has() { [ -n "$(hist "$1")" ]; }
# member_is NAME STATE: status shows member NAME in STATE (healthy, draining, impacted, gone...)
member_is() { [ "$(ctl status --json | jq -r ".members[] | select(.name == \"$1\") | .state")" = "$2" ]; }
# first_hook WHAT PHASE VM EVENT: the time of that hook line (start|end), empty if none
first_hook() { awk -v w="$1" -v p="$2" -v v="$3" -v e="$4" '$1 == w && $2 == p && $3 == v && $4 == e { print $5; exit }' "$HOOKLOG"; }

# rollout_checked EVENTS SECONDS: a platform Reboot rollout over the 3 fault domains (3000 s of
# notice, 30 s of impact); waits (SECONDS) until EVENTS events completed and the hooks
# settled, then checks the safety properties (check 3 --events EVENTS --all-approved)
rollout_checked() {
    curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":3000,"DurationInSeconds":30}' \
        "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
    wait_for "$2" completed_ge "$1" || fail "rollout not complete: $(ctl status)"
    wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
    check 3 --events "$1" --all-approved
}

# check FAULT_DOMAINS: the safety properties from the timeline and the hook logs
check() {
    curl -sS "$B/control/state" >"$TMP/state.json"
    python3 "$SC_SRC/tests/integration/coord/check.py" --timeline "$TL" --hooks "$HOOKLOG" \
        --state "$TMP/state.json" --fault-domains "$1" "${@:2}" || fail "safety check failed"
}
