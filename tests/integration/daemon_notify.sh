#!/usr/bin/env bash
# Both daemons as systemd runs them with Type=notify and WatchdogSec=4 (WATCHDOG_USEC), systemd
# played by tests/lib/sd_notify_receiver.py on the NOTIFY_SOCKET each gets (the coordinator's
# in the abstract namespace, the agents' a path), with every datagram's sender pid:
#  1. READY=1 once each is ready: when it arrives the coordinator answers `schedcoordctl
#     status` at the first try, the agent's state database is there; before it, the agent's
#     STATUS says what it waits for; every datagram comes from the daemon's own (main) pid;
#  2. the STATUS lines say what is going on and follow it: the coordinator's role, term,
#     events in flight and members alive; each agent's leader, coordinators, IMDS and hook —
#     through an event whose prepare the test holds, and an IMDS request left unanswered;
#     one a second at most;
#  3. WATCHDOG=1 every 2 s (half of WATCHDOG_USEC), never a gap systemd would kill for — not
#     even while the agent waits for an IMDS answer that does not come (5 s: its timeout);
#  4. STOPPING=1 at SIGTERM, and a clean exit.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

WD_USEC=4000000 # WatchdogSec=4: WATCHDOG=1 due every 2 s
COORD_SOCK="@schedcoord-test-$$-$RANDOM"
AGENT_SOCK="$TMP/agents.notify"
CN="$TMP/coord.notify.jsonl"
AN="$TMP/agents.notify.jsonl"

# receiver ADDRESS OUT: systemd's end of NOTIFY_SOCKET, its datagrams into OUT (JSON lines)
receiver() {
    : >"$2"
    python3 "$SC_SRC/tests/lib/sd_notify_receiver.py" "$1" "$2" >"$2.out" 2>&1 &
    PIDS+=("$!")
    wait_for 10 grep -q listening "$2.out" || fail "receiver at $1 did not start: $(cat "$2.out")"
}
# dgrams OUT PID [FILTER]: PID's datagrams in OUT (matching a jq boolean FILTER on .fields)
dgrams() { jq -c --argjson pid "$2" "select(.pid == \$pid) | select(.fields | ${3:-true})" "$1"; }
# has OUT PID FILTER: PID sent a datagram matching FILTER
has() { [ -n "$(dgrams "$@")" ]; }
# status_has OUT PID TEXT: one of PID's STATUS lines holds TEXT
status_has() { has "$1" "$2" "(.STATUS // \"\") | contains(\"$3\")"; }
# gaps OUT PID FILTER: {n, min, max} of the seconds between PID's datagrams matching FILTER
gaps() {
    dgrams "$@" | jq -s '[.[].t] | [range(1; length) as $i | .[$i] - .[$i - 1]]
        | {n: length, min: (min // 0), max: (max // 0)}'
}
on_fail_notify() {
    echo "--- coordinator's datagrams"
    cut -c1-220 "$CN" 2>/dev/null | tail -20
    echo "--- agents' datagrams"
    cut -c1-220 "$AN" 2>/dev/null | tail -30
}
sc_on_fail() {
    echo "--- coordinator log (tail)"
    tail -20 "$TMP/coord.err" 2>/dev/null || true
    on_fail_notify
}

receiver "$COORD_SOCK" "$CN"
receiver "$AGENT_SOCK" "$AN"
sim_start --vms 2 --fault-domains 2 --time-scale 100 --complete-after 100 --fault-timeout 8
NOTIFY_SOCKET="$AGENT_SOCK" WATCHDOG_USEC=$WD_USEC set_start 2
A0=${AGENT_PIDS[0]}
A1=${AGENT_PIDS[1]}
NOTIFY_SOCKET="$COORD_SOCK" WATCHDOG_USEC=$WD_USEC COORD_WAIT=0 coord_start
C=$COORD_PID

# --- 1. READY=1 once ready, from the main pid
wait_for 15 has "$CN" "$C" '.READY == "1"' || fail "no READY=1 from the coordinator"
ctl status >/dev/null || fail "READY=1 came, but the coordinator does not answer status"
for a in "$A0" "$A1"; do
    wait_for 15 has "$AN" "$a" '.READY == "1"' || fail "no READY=1 from agent $a"
done
[ -s "$TMP/agent_0/agent.db" ] && [ -s "$TMP/agent_1/agent.db" ] ||
    fail "an agent said READY=1 without its state database: $(ls "$TMP"/agent_*)"
[ "$(jq -s "[.[] | select(.pid != $C)] | length" "$CN")" = 0 ] ||
    fail "a datagram on the coordinator's socket from another pid than $C"
[ "$(jq -s "[.[] | select(.pid != $A0 and .pid != $A1)] | length" "$AN")" = 0 ] ||
    fail "a datagram on the agents' socket from another pid"
first=$(dgrams "$AN" "$A0" | head -1 | jq -r .fields.STATUS)
[ "$first" = "starting: reading this VM's name from IMDS" ] ||
    fail "the agent's first STATUS, before READY: $first"
ready=$(dgrams "$AN" "$A0" '.READY == "1"' | jq -r .fields.STATUS)
[[ "$ready" == *"coordinators connected; IMDS"* ]] || fail "the agent's STATUS at READY: $ready"
ok "READY=1 once ready (the coordinator answers status, the agents' state is open), from each main pid"

# --- 2. STATUS follows what happens
wait_for 15 status_has "$CN" "$C" "leader, term 1; 0 events in flight; 2/2 members alive" ||
    fail "the coordinator's STATUS never said it leads with both members alive"
for a in "$A0" "$A1"; do
    wait_for 15 status_has "$AN" "$a" "leader vm_0 (term 1), 1/1 coordinators connected; IMDS ok; no hook running" ||
        fail "agent $a's STATUS never said it follows vm_0 with IMDS ok"
done
prepare_hold 0
E=$(new_event '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 15 status_has "$AN" "$A0" "IMDS ok; prepare hook running for $E" ||
    fail "vm_0's agent never said its prepare hook runs for $E"
wait_for 15 status_has "$CN" "$C" "leader, term 1; 1 event in flight; 2/2 members alive" ||
    fail "the coordinator never said one event is in flight"
prepare_release 0
wait_for 30 ev_over "$E" || fail "$E not over: $(ctl events)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
wait_for 15 status_has "$CN" "$C" "leader, term 1; 0 events in flight; 2/2 members alive" ||
    fail "the coordinator's STATUS never came back to no event in flight"
ok "STATUS: the coordinator's events in flight and members alive, the agent's hook for $E"

# (vm_1 runs no coordinator: 1/2 connected)
# vm_1's IMDS leaves a request unanswered: its agent gives up after --imds-timeout (5 s), and
# its watchdog goes on meanwhile (checked in 3)
curl -sS -f -d '{"vm":"vm_1","answer":"timeout"}' "$B/control/faults" >/dev/null || fail "fault refused"
wait_for 20 status_has "$AN" "$A1" "IMDS failing" || fail "vm_1's agent never said its IMDS fails"
wait_for 15 has "$AN" "$A1" '(.STATUS // "") | endswith("IMDS ok; no hook running")' ||
    fail "vm_1's agent never said its IMDS answers again"
hung=$(dgrams "$AN" "$A1" '(.STATUS // "") | contains("IMDS failing")' | head -1)
[[ "$(jq -r .fields.STATUS <<<"$hung")" == *"IMDS failing (SC_E_TIMEOUT)"* ]] ||
    fail "vm_1's STATUS while its IMDS hung: $hung"
# (a WATCHDOG=1 after the hang: the gaps of 3 cover it)
wd_after() { jq -e --argjson pid "$A1" --argjson t "$(jq .t <<<"$hung")" \
    'select(.pid == $pid and .fields.WATCHDOG == "1" and .t > $t)' "$AN" >/dev/null; }
wait_for 10 wd_after || fail "no WATCHDOG=1 from vm_1's agent after its IMDS hang"
for p in "$C" "$A0" "$A1"; do
    out=$([ "$p" = "$C" ] && echo "$CN" || echo "$AN")
    g=$(gaps "$out" "$p" '.STATUS and .READY == null and .STOPPING == null')
    [ "$(jq '.min >= 0.9' <<<"$g")" = true ] || fail "pid $p sent STATUS more than once a second: $g"
done
ok "STATUS: an agent's IMDS failing and back; at most one STATUS a second"

# --- 3. WATCHDOG=1 every half WATCHDOG_USEC, even through the agent's long IMDS request
for p in "$C" "$A0" "$A1"; do
    out=$([ "$p" = "$C" ] && echo "$CN" || echo "$AN")
    g=$(gaps "$out" "$p" '.WATCHDOG == "1"')
    [ "$(jq '.n >= 2 and .min >= 1.6 and .max < 4' <<<"$g")" = true ] ||
        fail "pid $p's WATCHDOG=1 intervals (want every 2 s, none 4 s apart): $g"
done
ok "WATCHDOG=1 every 2 s from the three, never 4 s apart (vm_1's 5 s IMDS wait included)"

# --- 4. STOPPING=1 at SIGTERM
sc_stop agent "$A0"
sc_stop agent "$A1"
AGENT_PIDS=()
coord_stop
for p in "$A0" "$A1"; do
    wait_for 5 has "$AN" "$p" '.STOPPING == "1" and .STATUS == "stopping"' || fail "no STOPPING=1 from agent $p"
done
wait_for 5 has "$CN" "$C" '.STOPPING == "1" and .STATUS == "stopping"' || fail "no STOPPING=1 from the coordinator"
ok "SIGTERM: STOPPING=1 from the three, exit 0"
