#!/usr/bin/env bash
# End to end: min_healthy holds a drain back. With --min-healthy 5 of 6 members, draining
# fault domain 1 (2 VMs) would leave 4 healthy: the event waits, `schedcoordctl events` says
# why, nothing is drained or approved, and Azure starts it at NotBefore (how=not_before, a
# forced alert); once it is over its VMs run their recover hooks, told they were not prepared.
# Then a one-VM event (5 stay healthy) drains and is approved.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
coord_start --min-healthy 5
wait_for 20 all_members_seen 6 || fail "members not all seen"

# 500 simulated s = 5 s of notice.
E=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":500,"DurationInSeconds":30}')
waiting() { ctl events >"$TMP/events.txt" && grep -qF "$1" "$TMP/events.txt"; }
wait_for 5 waiting "waiting for: queued: draining 2 more would leave 4 healthy (min-healthy 5)" ||
    fail "no min-healthy explanation: $(cat "$TMP/events.txt")"
ok "held back by min-healthy, and events says why"
wait_for 15 ev_over "$E" || fail "the held event never ran: $(ctl events)"
[ "$(tl_count ".kind == \"started\" and .event == \"$E\" and .how == \"not_before\"")" -eq 1 ] ||
    fail "not started at NotBefore: $(jq -c "select(.kind == \"started\")" "$TL")"
[ "$(tl_count '.kind == "post"')" -eq 0 ] || fail "something was POSTed: $(jq -c 'select(.kind == "post")' "$TL")"
! grep -q "^start prepare " "$HOOKLOG" || fail "a prepare ran for the held event: $(cat "$HOOKLOG")"
hist_has ".kind == \"alert\" and .data.alert == \"forced\" and .data.event_id == \"$E\"" ||
    fail "no forced alert when Azure started it"
wait_for 10 sh -c "grep -q '^end recover vm_1 $E ' '$HOOKLOG' && grep -q '^end recover vm_4 $E ' '$HOOKLOG'" ||
    fail "the impacted VMs did not recover: $(cat "$HOOKLOG")"
[ "$(grep -c "^recover vm_[14] $E prepared=0 " "$HOOKENV")" -eq 2 ] ||
    fail "recover hooks not told they were unprepared: $(cat "$HOOKENV")"
ok "nothing drained or approved; Azure started it at NotBefore; its VMs recovered unprepared"

healthy_again() { [ "$(ctl status --json | jq '[.members[] | select(.state == "healthy")] | length')" -eq 6 ]; }
wait_for 10 healthy_again || fail "members not healthy again: $(ctl status)"
G=$(new_event '{"EventType":"Reboot","Resources":["vm_2"],"NoticeSeconds":1500,"DurationInSeconds":30}')
wait_for 15 ev_over "$G" || fail "a one-VM event did not go through: $(ctl events)"
wait_for 10 hooks_settled || fail "hooks did not settle"
check 3 --events 2
ok "a one-VM drain (5 stay healthy) went through"
coord_stop
