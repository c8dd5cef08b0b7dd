#!/usr/bin/env bash
# End to end: an event whose Resources also name a VM outside the cluster (imds-sim has 7 VMs,
# the members are vm_0 .. vm_5: vm_6 has no agent). Our one POST would start it for vm_6 too.
#  - by default: vm_1 (the member) is drained as usual, an alert (strangers) names vm_6, and
#    the event is not approved: no POST at all, Azure starts it at NotBefore; vm_1 recovered;
#  - with --approve-with-strangers: the next such event is approved once vm_2 is drained.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 7 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen"

# 1000 simulated s = 10 s of notice: a drained event is otherwise approved within a second.
S=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_6"],"NoticeSeconds":1000,"DurationInSeconds":30}')
wait_for 10 hist_has ".kind == \"alert\" and .data.alert == \"strangers\" and .data.event_id == \"$S\" and (.data.message | contains(\"(vm_6)\"))" ||
    fail "no strangers alert naming vm_6: $(hist '.kind == "alert"')"
wait_for 10 grep -q "^end prepare vm_1 $S " "$HOOKLOG" || fail "vm_1 not drained: $(ctl events)"
says_why() {
    ctl events >"$TMP/events.txt" &&
        grep -qF "1/1 drained; Resources name VMs outside the cluster (vm_6): not approved" "$TMP/events.txt"
}
wait_for 5 says_why || fail "events does not say why: $(cat "$TMP/events.txt")"
ok "vm_1 drained, alert names vm_6, events says why"

wait_for 20 ev_over "$S" || fail "the event never started: $(ctl events)"
[ "$(tl_count ".kind == \"started\" and .event == \"$S\" and .how == \"not_before\"")" -eq 1 ] ||
    fail "not started at NotBefore: $(jq -c "select(.kind == \"started\")" "$TL")"
[ "$(tl_count '.kind == "post"')" -eq 0 ] || fail "something was POSTed: $(jq -c 'select(.kind == "post")' "$TL")"
wait_for 10 grep -q "^end recover vm_1 $S " "$HOOKLOG" || fail "vm_1 not recovered: $(ctl events)"
check 3 --events 1
ok "no POST: Azure started it at NotBefore; vm_1 recovered"

coord_stop
coord_start --approve-with-strangers
wait_for 20 all_members_seen 6 || fail "members not all seen after the restart"
T=$(new_event '{"EventType":"Reboot","Resources":["vm_2","vm_6"],"NoticeSeconds":1000,"DurationInSeconds":30}')
wait_for 10 ev_over "$T" || fail "the event did not go through: $(ctl events)"
[ "$(tl_count ".kind == \"started\" and .event == \"$T\" and .how == \"approved\"")" -eq 1 ] ||
    fail "not started by our approval: $(jq -c "select(.kind == \"started\")" "$TL")"
hist_has ".kind == \"alert\" and .data.alert == \"strangers\" and .data.event_id == \"$T\" and (.data.message | contains(\"approve-with-strangers\"))" ||
    fail "no strangers alert for the approved event: $(hist '.kind == "alert"')"
wait_for 10 hooks_settled || fail "hooks did not settle"
check 3 --events 2 --strangers vm_6
ok "--approve-with-strangers: approved once vm_2 was drained (alert names vm_6)"
coord_stop
