# Helpers for the coordinator end-to-end tests (tests/integration/coord_*.sh). Sourced.
#
# One availability set on loopback: imds-sim (ephemeral port), N agents (--insecure, or CURVE
# keys after keys_make; each with a prepare and a recover hook that log "start|end PHASE VM
# EVENT TIME ATTEMPT" to hooks.log, "PHASE VM EVENT prepared=P attempt=A json=STDIN" to
# hookenv.log, "PHASE VM EVENT" to rehearsal.log when told SCHEDCOORD_REHEARSAL=1, and sleep a
# little), one coordinator (member vm_0). Everything is killed on exit;
# a daemon that exits non-zero (ASan, leaks) fails the test.
# Failures are detected faster than by default, to keep the tests short: agents heartbeat every
# second and members are dead after 5 s of silence (--dead-after; a test may give its own).
# FAST_LIVENESS=0: the daemons' defaults instead (fast_agent / fast_coord print the flags).
fast_agent() { [ "${FAST_LIVENESS:-1}" = 0 ] || echo "--heartbeat-interval 1"; }
fast_coord() { [ "${FAST_LIVENESS:-1}" = 0 ] || echo "--dead-after 5"; }
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/common.sh"
# Leaks of a process killed by a signal are not worth reporting; a clean exit must be clean.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"

COORD_PID=""
AGENT_PIDS=()
HOOKLOG="$TMP/hooks.log"
HOOKENV="$TMP/hookenv.log"
REHEARSAL_LOG="$TMP/rehearsal.log"
TL="$TMP/timeline.jsonl"
: >"$HOOKLOG"

sc_on_fail() {
    echo "--- coordinator log (tail)"
    tail -30 "$TMP/coord.err" 2>/dev/null || true
    if [ -s "$TMP/gate.err" ]; then
        echo "--- hook gates that never opened"
        cat "$TMP/gate.err"
    fi
}
sc_on_exit() { sc_kill "${AGENT_PIDS[@]}" "$COORD_PID"; }

# wait_for SECONDS CMD... -> polls CMD (its stderr dropped) every 0.1 s until it succeeds
wait_for() { sc_wait_until "$@" 2>/dev/null; }

# sim_start ARGS... (after --listen): sets PORT, B
sim_start() { sc_sim_start --timeline "$TL" "$@"; }

# write_hook I SLEEP [FAIL_PHASE] [PREPARE_LAST] [RUN]: vm_I's hook logs to hooks.log (with the
# drain attempt after the time; its stdout ends with "output of vm_I's PHASE, attempt N"),
# sleeps SLEEP s, runs the command RUN (in either phase, the
# event JSON on its stdin; its exit status becomes the hook's), and exits 1 in FAIL_PHASE
# (prepare or recover; "none"; PHASE@N: only in attempt N); a prepare runs the shell command
# PREPARE_LAST just before its end line. Read at each run: may be rewritten while agents run.
write_hook() {
    cat >"$TMP/agent_$1/hook.new" <<HOOK
#!/bin/sh
echo "start \$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID \$(date +%s.%N) \$SCHEDCOORD_ATTEMPT" >>"$HOOKLOG"
json=\$(cat)
echo "\$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID prepared=\${SCHEDCOORD_PREPARED-} attempt=\$SCHEDCOORD_ATTEMPT json=\$json" >>"$HOOKENV"
[ "\${SCHEDCOORD_REHEARSAL-}" != 1 ] || echo "\$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID" >>"$REHEARSAL_LOG"
sleep $2
rc=0
printf '%s\\n' "\$json" | ${5:-true} || rc=\$?
[ "\$SCHEDCOORD_PHASE" != prepare ] || ${4:-true}
echo "end \$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID \$(date +%s.%N) \$SCHEDCOORD_ATTEMPT" >>"$HOOKLOG"
echo "output of vm_$1's \$SCHEDCOORD_PHASE, attempt \$SCHEDCOORD_ATTEMPT"
case "\$SCHEDCOORD_PHASE@\$SCHEDCOORD_ATTEMPT" in ${3:-none} | ${3:-none}@*) exit 1 ;; esac
exit \$rc
HOOK
    chmod +x "$TMP/agent_$1/hook.new"
    mv "$TMP/agent_$1/hook.new" "$TMP/agent_$1/hook"
}

# Hook gates: a prepare that waits for what the test needs to have happened first, so that the
# test decides the order of things instead of sleeping and hoping. gate WHAT... prints a shell
# command for write_hook's PREPARE_LAST that waits until
#   gate release NAME    the test called release NAME;
#   gate fetched VM      VM's agent fetched a document that holds the hook's event: the timeline
#                        has a 200 GET of VM's scheduled events after the event's creation (the
#                        agent sends that document to the coordinator before it handles the end
#                        of its own hooks);
# after 25 s (within the agents' --hook-timeout 30) the hook fails, named in gate.err.
gate() {
    [ -x "$TMP/gate.sh" ] || {
        cat >"$TMP/gate.sh" <<'GATE'
#!/bin/sh
dir=$(dirname "$0")
i=0
until case $1 in
    release) [ -e "$dir/release.$2" ] ;;
    fetched) jq -es --arg vm "$2" --arg ev "$SCHEDCOORD_EVENT_ID" '
        (map(select(.kind == "created" and .event == $ev)) | first | .seq) as $c
        | $c != null and any(.[]; .kind == "get" and .vm == $vm and .status == 200
            and .path == null and .seq > $c)' "$dir/timeline.jsonl" >/dev/null 2>&1 ;;
    *) false ;;
    esac; do
    i=$((i + 1))
    if [ "$i" -ge 250 ]; then
        echo "gate $* ($SCHEDCOORD_PHASE $SCHEDCOORD_VM $SCHEDCOORD_EVENT_ID): not open after 25 s" >>"$dir/gate.err"
        exit 1
    fi
    sleep 0.1
done
GATE
        chmod +x "$TMP/gate.sh"
    }
    echo "$TMP/gate.sh $* || exit 1"
}
# release NAME: opens the hooks' gate release NAME
release() { : >"$TMP/release.$1"; }

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

# set_start N: MEMBERS for N VMs (vm_0 .. vm_{N-1}, on the test's own SC_LO), hooks, N agents
# (but none for the VMs whose numbers LATE lists, e.g. LATE=5: members that join later, when
# the test calls agent_start)
set_start() {
    local n=$1 i ports
    read -r -a ports <<<"$(free_ports "$n" "$SC_LO")"
    MEMBERS=""
    for ((i = 0; i < n; i++)); do
        MEMBERS+="${MEMBERS:+,}vm_$i=$SC_LO:${ports[$i]}"
    done
    for ((i = 0; i < n; i++)); do
        mkdir -p "$TMP/agent_$i"
        write_hook "$i" "${HOOK_SLEEP:-0.3}"
        [[ " ${LATE:-} " == *" $i "* ]] || agent_start "$i"
    done
}

# coord_start [extra flags]: the coordinator of vm_0; returns once it answers schedcoordctl
# status (COORD_WAIT=0: at once)
coord_start() {
    "$SC_BIN/schedcoord-coordinator" --name vm_0 --imds-url "$B/vm_0" --members "$MEMBERS" \
        --state-dir "$TMP/coord" $(sec_args vm_0) --deadline-margin-s 1 $(fast_coord) \
        --voters "${VOTERS:-1}" "$@" \
        >>"$TMP/coord.out" 2>>"$TMP/coord.err" &
    COORD_PID=$!
    [ "${COORD_WAIT:-1}" = 0 ] && return
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

hooks_settled() { # [GONE_VM...]: every start has its end, and every prepared VM recovered in
    # the same drain attempt (write_hook's 6th field; a rollback's recover is its attempt's, the
    # recover after the event another's), but the VMs named (gone: a Terminate or Preempt
    # deleted them); a VM impacted without a prepare recovers too: more recovers than
    # prepares is fine
    awk -v gone=" $* " '$1 == "start" { s++ } $1 == "end" { e++ }
         $1 == "end" && $2 == "prepare" && !index(gone, " " $3 " ") { p[$3 " " $4 " " $6] = 1 }
         $1 == "end" && $2 == "prepare" { np++ }
         $1 == "end" && $2 == "recover" { r[$3 " " $4 " " $6] = 1 }
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

# rollout_checked EVENTS SECONDS: a platform Reboot rollout over the 3 fault domains (30000 s
# of notice, 300 s at x100, more than a test lasts: every event is ours to approve; 30 s of
# impact); waits (SECONDS) until EVENTS events completed and the hooks settled, then checks the
# safety properties (check 3 --events EVENTS --all-approved)
rollout_checked() {
    curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
        "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
    wait_for "$2" completed_ge "$1" || fail "rollout not complete: $(ctl status)"
    wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
    check 3 --events "$1" --all-approved
}

# check FAULT_DOMAINS [check.py options]: the safety properties from the timeline and the hook
# logs (rehearsals' hooks included: their windows count like any)
check() {
    curl -sS "$B/control/state" >"$TMP/state.json"
    python3 "$SC_SRC/tests/integration/coord/check.py" --timeline "$TL" --hooks "$HOOKLOG" \
        --state "$TMP/state.json" --fault-domains "$1" "${@:2}" || fail "safety check failed"
}

# hook_at WHAT PHASE VM EVENT ATTEMPT: the time of that hook line (start|end) of that drain
# attempt (write_hook's lines), empty if none
hook_at() {
    awk -v w="$1" -v p="$2" -v v="$3" -v e="$4" -v n="$5" \
        '$1 == w && $2 == p && $3 == v && $4 == e && $6 == n { print $5; exit }' "$HOOKLOG"
}
# in_order T...: every time (unix seconds) is given and earlier than the next
in_order() {
    python3 -c 'import sys; t = [float(x) for x in sys.argv[1:]]; sys.exit(any(a >= b for a, b in zip(t, t[1:])))' "$@" 2>/dev/null
}
# tl_wall FILTER: the time (wall) of the first timeline fact matching a jq boolean FILTER
tl_wall() { jq -r "select($1) | .wall" "$TL" | head -1; }
# drain_is EVENT VM STATE: the coordinator shows VM's drain for EVENT in STATE (rolled_back...)
drain_is() {
    [ "$(ctl events --json | jq -r ".events[] | select(.EventId == \"$1\") | .drains.$2")" = "$3" ]
}
# ev_closed ID: the coordinator closed the event (every VM recovered, forgotten by the
# planner): events --json shows it no longer, or without waiting_for (as ended history)
ev_closed() {
    ctl events --json | jq -e --arg id "$1" '[.events[] | select(.EventId == $id and .waiting_for != null)] | length == 0' >/dev/null
}
# started_how EVENT: how the simulator started it (approved, not_before, host_failure), empty
# while it has not started
started_how() { jq -r "select(.kind == \"started\" and .event == \"$1\") | .how" "$TL"; }
# hooks_idle: every hook that started has ended (recovers may outnumber prepares: a VM impacted
# undrained may be recovered without one)
hooks_idle() { [ "$(grep -c '^start ' "$HOOKLOG" || true)" -eq "$(grep -c '^end ' "$HOOKLOG" || true)" ]; }
# coord_crash: kill -9 the coordinator (no clean exit, its store as the crash left it)
coord_crash() {
    kill -9 "$COORD_PID"
    wait "$COORD_PID" 2>/dev/null || true
    COORD_PID=""
}

# webhook_start NAME [--after N] [--fail N] [--hold FILE]: a webhook receiver (coord/webhook.py) that
# records every POST in $TMP/NAME.jsonl -> WEBHOOK, its base URL (http://127.0.0.1:PORT)
webhook_start() {
    local name=$1
    shift
    python3 "$SC_SRC/tests/integration/coord/webhook.py" --out "$TMP/$name.jsonl" "$@" \
        >"$TMP/$name.out" 2>>"$TMP/$name.err" &
    PIDS+=("$!")
    : >>"$TMP/$name.jsonl"
    wait_for 10 grep -q '^listening on ' "$TMP/$name.out" ||
        fail "webhook receiver $name did not start: $(cat "$TMP/$name.err")"
    WEBHOOK="http://127.0.0.1:$(sed -n 's/^listening on //p' "$TMP/$name.out")"
}
# webhook_got NAME N: receiver NAME answered at least N POSTs with 200
webhook_got() { [ "$(jq -s '[.[] | select(.status == 200)] | length' "$TMP/$1.jsonl")" -ge "$2" ]; }

# ev_patch ID JSON: changes a Scheduled event in the simulator (PATCH /control/events/ID)
ev_patch() { curl -sS -f -X PATCH -d "$2" "$B/control/events/$1" >/dev/null || fail "PATCH $1 $2 refused"; }

# agent_freeze I / agent_thaw I: SIGSTOP / SIGCONT vm_I's agent (silent, its sockets still
# open). A frozen agent would never act on the exit's SIGTERM: the exit thaws every agent first.
agent_freeze() {
    kill -STOP "${AGENT_PIDS[$1]}"
    trap 'kill -CONT "${AGENT_PIDS[@]}" 2>/dev/null; sc_cleanup' EXIT
}
agent_thaw() { kill -CONT "${AGENT_PIDS[$1]}"; }

# prepare_hold I: vm_I's prepare hook does not end before prepare_release I (the test decides
# how long the VM is draining); otherwise as write_hook's, HOOK_SLEEP (0.3 s) long
prepare_hold() {
    rm -f "$TMP/agent_$1/release"
    write_hook "$1" "${HOOK_SLEEP:-0.3}" none "while [ ! -e '$TMP/agent_$1/release' ]; do sleep 0.1; done"
}
prepare_release() { : >"$TMP/agent_$1/release"; }

# agent_start I [STATE_DIR]: starts vm_I's agent as set_start does (hooks $TMP/agent_I/hook)
# with its state in STATE_DIR (default $TMP/agent_I) -> AGENT_PIDS[I]
agent_start() {
    # shellcheck disable=SC2046 # sec_args prints separate words
    "$SC_BIN/schedcoord-agent" --name "vm_$1" --imds-url "$B/vm_$1" --members "$MEMBERS" \
        --state-dir "${2:-$TMP/agent_$1}" --prepare-hook "$TMP/agent_$1/hook" \
        --recover-hook "$TMP/agent_$1/hook" $(sec_args "vm_$1") --poll-interval "${POLL:-0.5}" \
        $(fast_agent) --standalone-after 600 --hook-timeout 30 --log-level warn \
        >>"$TMP/agent_$1.out" 2>>"$TMP/agent_$1.err" &
    AGENT_PIDS[$1]=$!
}

# ---- several coordinators (the election) ----------------------------------------------------
# coords_start N [ARGS...]: coordinators of vm_1 .. vm_{N-1} beside coord_start's vm_0 (which
# the caller starts, e.g. VOTERS=3 coord_start), each in $TMP/coord_i, logging to
# $TMP/coord_i.err; their pids in CPIDS (killed on exit).
coords_start() {
    local n=$1 i
    shift
    for ((i = 1; i < n; i++)); do coord_i_start "$i" "$@"; done
}
# coord_i_start I [ARGS...]: (re)starts vm_I's coordinator (I >= 1)
coord_i_start() {
    local i=$1
    shift
    # shellcheck disable=SC2046 # sec_args prints separate words
    "$SC_BIN/schedcoord-coordinator" --name "vm_$i" --imds-url "$B/vm_$i" --members "$MEMBERS" \
        --state-dir "$TMP/coord_$i" $(sec_args "vm_$i") --deadline-margin-s 1 $(fast_coord) "$@" \
        >>"$TMP/coord_$i.out" 2>>"$TMP/coord_$i.err" &
    CPIDS[i]=$!
    PIDS+=("$!")
}
coord_dir() { [ "$1" = vm_0 ] && echo "$TMP/coord" || echo "$TMP/coord_${1#vm_}"; }
coord_err() { [ "$1" = vm_0 ] && echo "$TMP/coord.err" || echo "$TMP/coord_${1#vm_}.err"; }
coord_pid() { [ "$1" = vm_0 ] && echo "$COORD_PID" || echo "${CPIDS[${1#vm_}]:-}"; }
cst() { "$SC_BIN/schedcoordctl" --state-dir "$(coord_dir "$1")" status --json 2>/dev/null; }
# leader N: the one member that leads and may act, followed by the N coordinators
# (vm_0 .. vm_{N-1}) that answer; fails while there is none or they disagree
leader() {
    local n=$1 i l who="" seen=0
    for ((i = 0; i < n; i++)); do
        l=$(cst "vm_$i" | jq -r 'if .role == "leader" and (.may_act | not) then "" elif .role == "leader" then .self else .leader // "" end') || continue
        [ -n "$l" ] || return 1
        [ -z "$who" ] || [ "$who" = "$l" ] || return 1
        who=$l
        seen=$((seen + 1))
    done
    [ "$seen" -ge 2 ] && echo "$who"
}
# follows_new VM TERM: VM follows a leader other than itself at a term after TERM; that leader
# goes in F. Not a given leader: on a busy machine a lease may lapse and a further election
# follow, both correct (use it with wait_for).
follows_new() {
    local s
    s=$(cst "$1" | jq -r --argjson t "$2" 'select(.role == "voter" and .term > $t) | .leader // empty') &&
        [ -n "$s" ] && [ "$s" != "$1" ] && F=$s
}
# leader_wait SECONDS N: waits until leader N names one leader, which it puts in LEADER (a
# second call of leader could fail: a leader's lease may lapse a moment on a busy machine)
leader_wait() {
    local n=$2
    s_leader_set() { LEADER=$(leader "$n"); }
    wait_for "$1" s_leader_set
}
# one_leader: no two coordinators may act at once (their "may act" log lines; a coordinator
# killed at a time written in $TMP/killed as "vm_i UNIX_S" stopped acting then)
one_leader() {
    python3 "$SC_SRC/tests/integration/coord/one_leader.py" --killed "$TMP/killed" "$TMP"/coord*.err ||
        fail "two coordinators acting at once"
}
# election_rollout [PREPARE_LAST]: six VMs in three fault domains (imds-sim also given the
# array SIM_ARGS, if set), hooks of 2 s (HOOK_SLEEP; a prepare runs PREPARE_LAST, e.g. a gate,
# before its end); ROLLOUT_LEADER=vm_0: the rollout starts only once vm_0 leads; three coordinators (three voters) electing L (its term T); a Reboot rollout started,
# and returns once the first prepare hook has started: the moment the fault tests strike the
# leader
election_rollout() {
    local i sleep=${HOOK_SLEEP:-2}
    sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100 "${SIM_ARGS[@]}"
    HOOK_SLEEP=$sleep set_start 6
    for ((i = 0; i < 6; i++)); do [ -z "${1:-}" ] || write_hook "$i" "$sleep" none "$1"; done
    VOTERS=3 coord_start
    coords_start 3
    leader_wait 30 3 ||
        fail "no leader: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, term, may_act}'; done)"
    L=$LEADER
    if [ -n "${ROLLOUT_LEADER:-}" ]; then # the preferred member leads (a transfer, 10 s later)
        _rollout_leads() { [ "$(leader 3)" = "$ROLLOUT_LEADER" ]; }
        wait_for 30 _rollout_leads || fail "$ROLLOUT_LEADER does not lead: $(leader 3)"
        L=$ROLLOUT_LEADER
    fi
    T=$(cst "$L" | jq .term)
    curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
        "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
    wait_for 30 grep -q "^start prepare" "$HOOKLOG" || fail "no prepare started: $(cat "$HOOKLOG")"
}
# election_rollout_end N: the rollout over under leader N, every rule kept, one acting leader
election_rollout_end() {
    wait_for 120 completed_ge 3 || fail "rollout not complete: $(cst "$1" | jq -c '.events')"
    wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
    check 3 --events 3 --all-approved
    one_leader
    # each event is one fault domain's: a leader that knows every member's domain (reported
    # to it while it followed, before the election) never finds one "too wide"
    ! grep -h 'alert=too_wide' "$TMP"/coord*.err || fail "a leader did not know the members' fault domains"
}

# ---- VMs whose impact kills their daemons (imds-sim --on-impact) -----------------------------
# platform_cmd: prints the --on-impact command for sim_start (the platform's hand on the VMs).
# When an impact on a VM begins, the daemons vm_mortal registered for that VM are killed with
# kill -9, as its reboot or deletion would kill them (a coordinator's kill is written to
# $TMP/killed for one_leader), and "killed VM TYPE EVENT" goes to $TMP/platform.log. A
# registration is used once: the test starts the VM's daemons again when it wants (after the
# impact's end, impact_over) and registers them again if they are to die again.
platform_cmd() {
    cat >"$TMP/platform.sh" <<'PLATFORM'
#!/bin/sh
# imds-sim --on-impact: start|end VM EventType EventId
dir=$(dirname "$0")
[ "$1" = start ] && [ -e "$dir/mortal.$2" ] || exit 0
while read -r what pid; do
    kill -9 "$pid" || continue
    [ "$what" != coord ] || echo "$2 $(date +%s.%N)" >>"$dir/killed"
done <"$dir/mortal.$2"
rm -f "$dir/mortal.$2"
echo "killed $2 $3 $4" >>"$dir/platform.log"
PLATFORM
    chmod +x "$TMP/platform.sh"
    : >>"$TMP/platform.log"
    echo "$TMP/platform.sh"
}
# vm_mortal I: vm_I's agent and coordinator (those running) die when an impact on vm_I begins
vm_mortal() {
    local f="$TMP/mortal.vm_$1" c
    c=$(coord_pid "vm_$1")
    { [ -z "${AGENT_PIDS[$1]:-}" ] || echo "agent ${AGENT_PIDS[$1]}"; [ -z "$c" ] || echo "coord $c"; } >"$f.new"
    mv "$f.new" "$f"
}
# vm_killed I: the platform killed vm_I's daemons (platform.log)
vm_killed() { grep -q "^killed vm_$1 " "$TMP/platform.log"; }
# vm_reap I: after vm_killed, reaps vm_I's killed daemons; none of vm_I runs any more
vm_reap() {
    local c
    c=$(coord_pid "vm_$1")
    wait "${AGENT_PIDS[$1]}" 2>/dev/null || true
    [ -z "$c" ] || wait "$c" 2>/dev/null || true
    AGENT_PIDS[$1]=""
    if [ "$1" = 0 ]; then COORD_PID=""; else CPIDS[$1]=""; fi
}
# impact_over VM: the simulator ended an impact on VM (its timeline's impact_end)
impact_over() { [ "$(tl_count ".kind == \"impact_end\" and .vm == \"$1\"")" -ge 1 ]; }
