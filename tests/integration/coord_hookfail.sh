#!/usr/bin/env bash
# End to end: a prepare hook that fails (vm_4 exits 1) blocks its event's approval, not the
# cluster: no POST for that event, an alert (prepare_failed) in the decision log, the event
# left to Azure (started at NotBefore), both its VMs recovered after it ended, and then the
# event queued in the next fault domain drains and is approved normally.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
write_hook 4 0.3 prepare
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen"

# 600 simulated s = 6 s of notice for the failing event (left to its NotBefore); 300 s for the
# next one, more than the test lasts: it is ours to approve, however late F's end is seen.
F=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":600,"DurationInSeconds":30}')
N=$(new_event '{"EventType":"Reboot","Resources":["vm_2","vm_5"],"NoticeSeconds":30000,"DurationInSeconds":30}')
wait_for 10 hist_has ".kind == \"alert\" and .data.alert == \"prepare_failed\" and .data.event_id == \"$F\" and .data.member == \"vm_4\"" ||
    fail "no prepare_failed alert: $(ctl events)"
# (vm_1's own prepare may be reported a moment after vm_4's failure: then both are named)
says_why() {
    ctl events >"$TMP/events.txt" &&
        grep -qF "waiting for: prepare failed (vm_4 (prepare_failed)): not approved" "$TMP/events.txt"
}
wait_for 5 says_why || fail "events does not say why: $(cat "$TMP/events.txt")"
grep -q "^start prepare vm_2 $N " "$HOOKLOG" && fail "FD 2 drained while FD 1's event is unresolved"
ok "prepare failed on vm_4: alert, not approved, FD 2 waits"

wait_for 20 ev_over "$F" || fail "the failed event never started: $(ctl events)"
[ "$(tl_count ".kind == \"started\" and .event == \"$F\" and .how == \"not_before\"")" -eq 1 ] ||
    fail "the failed event did not start at NotBefore: $(jq -c "select(.kind == \"started\")" "$TL")"
wait_for 10 sh -c "grep -q '^end recover vm_1 $F ' '$HOOKLOG' && grep -q '^end recover vm_4 $F ' '$HOOKLOG'" ||
    fail "the failed event's VMs not recovered: $(grep " $F " "$HOOKLOG")"
ok "left to NotBefore, both VMs recovered after it ended"

wait_for 20 ev_over "$N" || fail "the next fault domain's event did not go through: $(ctl events)"
[ "$(tl_count ".kind == \"started\" and .event == \"$N\" and .how == \"approved\"")" -eq 1 ] ||
    fail "the next event was not approved by us"
wait_for 10 hooks_settled || fail "hooks did not settle"
check 3 --events 2
[ "$(hist '.kind == "approval_intent"' | jq -r '.data.event_ids[]')" = "$N" ] ||
    fail "approval intents: $(hist '.kind == "approval_intent"')"
ok "not stuck: the next fault domain drained after the recover, approved once"
coord_stop
