#!/usr/bin/env bash
# End to end: an agent killed (SIGKILL) while its hook runs reports the run as "interrupted"
# when it restarts and never re-runs it, not even on a new order. The coordinator must take
# that answer as final:
#  - prepare interrupted on vm_1: no order loop (the agent would answer every re-order with
#    "interrupted" again), an alert, and the event's drain rolled back at once (issue 9 case
#    6): the recover hooks of vm_1 and vm_3 run while the event is still Scheduled;
#  - recover interrupted on vm_3 during that rollback: an alert (recover_failed), the drain is
#    not tried again (vm_3's state is unknown), the event is left to NotBefore and closes after
#    it ended, and the event queued in the other fault domain drains and is approved by us
#    (the cluster is not stuck "recovering").
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 4 --fault-domains 2 --time-scale 100 --complete-after 100
set_start 4
# a retry 1 s after a rollback: only the failed recover keeps A from being drained again
coord_start --prepare-retry-s 1
wait_for 20 all_members_seen 4 || fail "members not all seen"

# slow_hook I PHASE: vm_I's hook writes its pid (= its process group) and sleeps 25 s in PHASE
slow_hook() {
    cat >"$TMP/agent_$1/hook.new" <<HOOK
#!/bin/sh
echo "start \$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID \$(date +%s.%N) \$SCHEDCOORD_ATTEMPT" >>"$HOOKLOG"
if [ "\$SCHEDCOORD_PHASE" = "$2" ]; then echo \$\$ >"$TMP/agent_$1/hook.pid"; exec sleep 25; fi
sleep 0.3
echo "end \$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID \$(date +%s.%N) \$SCHEDCOORD_ATTEMPT" >>"$HOOKLOG"
HOOK
    chmod +x "$TMP/agent_$1/hook.new"
    mv "$TMP/agent_$1/hook.new" "$TMP/agent_$1/hook"
}

# crash_agent I: kill -9 vm_I's agent and its running hook, start the agent again (fast hook)
crash_agent() {
    local pid=${AGENT_PIDS[$1]}
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    kill -9 -- "-$(cat "$TMP/agent_$1/hook.pid")" 2>/dev/null || true
    write_hook "$1" 0.3
    agent_start "$1"
}

slow_hook 1 prepare
slow_hook 3 recover
# A: FD 1 (vm_1, vm_3), NotBefore in 8 s. N: FD 0, queued behind A, NotBefore in 25 s.
A=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_3"],"NoticeSeconds":800,"DurationInSeconds":30}')
N=$(new_event '{"EventType":"Reboot","Resources":["vm_0","vm_2"],"NoticeSeconds":2500,"DurationInSeconds":30}')

wait_for 10 test -s "$TMP/agent_1/hook.pid" || fail "vm_1's prepare hook never started"
crash_agent 1
wait_for 10 hist_has ".kind == \"hook_progress\" and .data.event_id == \"$A\" and .data.vm == \"vm_1\" and .data.state == \"interrupted\"" ||
    fail "the interrupted prepare was not reported"
wait_for 5 hist_has ".kind == \"alert\" and .data.alert == \"prepare_failed\" and .data.event_id == \"$A\" and .data.member == \"vm_1\"" ||
    fail "no alert for the interrupted prepare: $(ctl events)"
ok "prepare interrupted on vm_1: alert"

# the rollback: vm_1 (its new agent, fast hook) and vm_3 (slow recover hook) are recovered
wait_for 10 test -s "$TMP/agent_3/hook.pid" || fail "vm_3's recover hook (rollback) never started: $(ctl events)"
wait_for 5 grep -q "^end recover vm_1 $A " "$HOOKLOG" || fail "vm_1 (prepare interrupted) not rolled back"
[ -z "$(started_how "$A")" ] || fail "A started ($(started_how "$A")) before its rollback"
crash_agent 3
wait_for 10 hist_has ".kind == \"hook_progress\" and .data.event_id == \"$A\" and .data.vm == \"vm_3\" and .data.phase == \"recover\" and .data.state == \"interrupted\"" ||
    fail "the interrupted recover was not reported"
wait_for 5 hist_has ".kind == \"alert\" and .data.alert == \"recover_failed\" and .data.event_id == \"$A\" and .data.member == \"vm_3\"" ||
    fail "no alert for the interrupted recover: $(ctl events)"
ok "A rolled back before it started: vm_1 recovered; recover interrupted on vm_3, alert"

wait_for 12 ev_over "$N" || fail "FD 0's event never went through: $(ctl events)"
[ "$(started_how "$N")" = approved ] ||
    fail "N was not approved by us (cluster stuck behind vm_3?): $(jq -c 'select(.kind == "started")' "$TL")"
ok "FD 1 released: FD 0's event drained and approved"

wait_for 15 ev_over "$A" || fail "A never started: $(ctl events)"
[ "$(started_how "$A")" = not_before ] || fail "A was not left to NotBefore: $(jq -c 'select(.kind == "started")' "$TL")"
wait_for 10 ev_closed "$A" || fail "A not closed after it ended: $(ctl events)"
orders=$(hist ".kind == \"prepare_ordered\" and .data.event_id == \"$A\" and .data.vms[0] == \"vm_1\"" | wc -l)
[ "$orders" -eq 1 ] || fail "prepare of vm_1 ordered $orders times (an order loop, or a retry after a failed rollback)"
[ "$(grep -c "^start prepare vm_1 $A " "$HOOKLOG")" -eq 1 ] || fail "vm_1's prepare ran again"
[ "$(grep -c "^start recover vm_3 $A " "$HOOKLOG")" -eq 1 ] || fail "vm_3's recover ran twice"
hist_has ".kind == \"alert\" and .data.alert == \"drain_retry\" and .data.event_id == \"$A\"" &&
    fail "A's drain was tried again after its rollback failed"
ok "A not drained again, left to NotBefore, closed after it ended; no hook ran twice"
coord_stop
