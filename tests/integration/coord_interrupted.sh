#!/usr/bin/env bash
# End to end: an agent killed (SIGKILL) while its hook runs reports the run as "interrupted"
# when it restarts and never re-runs it, not even on a new order. The coordinator must take
# that answer as final:
#  - prepare interrupted on vm_1: no order loop (the agent would answer every re-order with
#    "interrupted" again), an alert, the event not approved (left to NotBefore), and both
#    its VMs recovered after it ended;
#  - recover interrupted on vm_3: an alert, the event closes, and the event queued in the
#    other fault domain drains and is approved by us (the cluster is not stuck "recovering").
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 4 --fault-domains 2 --time-scale 100 --complete-after 100
set_start 4
coord_start
wait_for 20 all_members_seen 4 || fail "members not all seen"

# slow_hook I PHASE: vm_I's hook writes its pid (= its process group) and sleeps 25 s in PHASE
slow_hook() {
    cat >"$TMP/agent_$1/hook.new" <<HOOK
#!/bin/sh
echo "start \$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID \$(date +%s.%N)" >>"$HOOKLOG"
if [ "\$SCHEDCOORD_PHASE" = "$2" ]; then echo \$\$ >"$TMP/agent_$1/hook.pid"; exec sleep 25; fi
sleep 0.3
echo "end \$SCHEDCOORD_PHASE vm_$1 \$SCHEDCOORD_EVENT_ID \$(date +%s.%N)" >>"$HOOKLOG"
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
    # shellcheck disable=SC2046 # sec_args prints separate words
    "$SC_BIN/schedcoord-agent" --name "vm_$1" --imds-url "$B/vm_$1" --members "$MEMBERS" \
        --state-dir "$TMP/agent_$1" --prepare-hook "$TMP/agent_$1/hook" \
        --recover-hook "$TMP/agent_$1/hook" $(sec_args "vm_$1") --poll-interval "${POLL:-0.5}" \
        --standalone-after 600 --hook-timeout 30 --log-level warn \
        >>"$TMP/agent_$1.out" 2>>"$TMP/agent_$1.err" &
    AGENT_PIDS[$1]=$!
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
sleep 2
orders=$(hist ".kind == \"prepare_ordered\" and .data.event_id == \"$A\" and .data.vms[0] == \"vm_1\"" | wc -l)
[ "$orders" -le 2 ] || fail "prepare of vm_1 ordered $orders times (order loop on an interrupted run)"
hist_has ".kind == \"alert\" and .data.event_id == \"$A\" and .data.member == \"vm_1\"" ||
    fail "no alert for the interrupted prepare: $(ctl events)"
ok "prepare interrupted on vm_1: $orders order(s), alert, not re-run"

wait_for 15 test -s "$TMP/agent_3/hook.pid" || fail "vm_3's recover hook never started: $(ctl events)"
[ "$(tl_count ".kind == \"started\" and .event == \"$A\" and .how == \"not_before\"")" -eq 1 ] ||
    fail "A was not left to NotBefore: $(jq -c 'select(.kind == "started")' "$TL")"
crash_agent 3
wait_for 10 hist_has ".kind == \"hook_progress\" and .data.event_id == \"$A\" and .data.vm == \"vm_3\" and .data.phase == \"recover\" and .data.state == \"interrupted\"" ||
    fail "the interrupted recover was not reported"
wait_for 5 grep -q "^end recover vm_1 $A " "$HOOKLOG" ||
    fail "vm_1 (prepare interrupted) not recovered"
ok "A left to NotBefore; vm_1 recovered; recover interrupted on vm_3"

wait_for 10 hist_has ".kind == \"alert\" and .data.event_id == \"$A\" and .data.member == \"vm_3\"" ||
    fail "no alert for the interrupted recover: $(ctl events)"
wait_for 12 ev_over "$N" || fail "FD 0's event never went through: $(ctl events)"
[ "$(tl_count ".kind == \"started\" and .event == \"$N\" and .how == \"approved\"")" -eq 1 ] ||
    fail "N was not approved by us (cluster stuck behind vm_3?): $(jq -c 'select(.kind == "started")' "$TL")"
[ "$(grep -c "^start recover vm_3 $A " "$HOOKLOG")" -eq 1 ] || fail "vm_3's recover ran twice"
ok "recover interrupted on vm_3: alert, A closed, FD 0's event drained and approved"
coord_stop
