#!/usr/bin/env bash
# End to end: events we did not approve.
#  1. A host failure (an event first seen Started) in fault domain 2 while fault domain 1 is
#     being drained by us: recorded as forced (alert), its VM counted impacted, no POST for it;
#     fault domain 1's event still approved; the event queued in fault domain 0 starts only
#     when both are back; the failed VM gets its recover order when the event ends and runs its
#     recover hook, told it was not prepared (coord_forced_recover.sh checks the details).
#  2. An event cancelled (DELETE) while one VM is drained and the other still preparing: no
#     POST, both VMs recovered after the cancellation, and the next event goes through.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen"

# --- 1. host failure in FD 2 while FD 1 is drained
# FD 1's prepares end only once the coordinator has seen the host failure: it comes while FD 1
# drains, not after FD 1's event was approved.
for i in 1 4; do write_hook $i 0.3 none "$(gate release hostfail)"; done
A=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":3000,"DurationInSeconds":30}')
C=$(new_event '{"EventType":"Reboot","Resources":["vm_0","vm_3"],"NoticeSeconds":3100,"DurationInSeconds":30}')
# Both of FD 1's prepares running before the host failure: a prepare ordered before it but
# started after it would count as a new drain during it (check.py rule 3b).
wait_for 10 sh -c "grep -q '^start prepare vm_1 $A ' '$HOOKLOG' && grep -q '^start prepare vm_4 $A ' '$HOOKLOG'" ||
    fail "FD 1 drain did not start"
H=$(new_event '{"EventType":"Reboot","Resources":["vm_2"],"Status":"Started","DurationInSeconds":400}')
wait_for 5 member_is vm_2 impacted ||
    fail "vm_2 not impacted: $(ctl status)"
grep -q "^end prepare vm_[14] $A " "$HOOKLOG" && fail "FD 1 drained before the host failure was seen"
release hostfail
ok "host failure seen while FD 1 drains: vm_2 impacted"
wait_for 40 ev_over "$A" "$C" "$H" || fail "events not over: $(ctl events)"
wait_for 10 sh -c "[ \$(grep -c '^end recover' '$HOOKLOG') -eq 5 ]" || fail "recovers: $(grep recover "$HOOKLOG")"
[ "$(tl_count ".kind == \"started\" and .event == \"$H\" and .how == \"host_failure\"")" -eq 1 ] ||
    fail "the simulator did not start $H as a host failure"
[ "$(tl_count ".kind == \"started\" and .event == \"$A\" and .how == \"approved\"")" -eq 1 ] ||
    fail "FD 1's event was not approved by us during the host failure"
hist_has ".kind == \"event_started\" and .data.event_id == \"$H\" and .data.how == \"host_failure\"" ||
    fail "decision log: host failure not recorded as such"
hist_has ".kind == \"alert\" and .data.alert == \"forced\" and .data.event_id == \"$H\"" ||
    fail "decision log: no forced alert for the host failure"
# Nothing new until both are back: FD 0's drain after the host failure ended and vm_2 and FD 1
# recovered.
c0=$(first_hook start prepare vm_0 "$C")
h_back=$(first_hook end recover vm_2 "$H")
a_back=$(awk -v e="$A" '$1 == "end" && $2 == "recover" && $4 == e { print $5 }' "$HOOKLOG" | sort -n | tail -1)
[ -n "$c0" ] && [ -n "$a_back" ] && [ -n "$h_back" ] || fail "FD 0 never drained, or FD 1 or vm_2 never recovered"
python3 -c "import sys; c, h, a = map(float, sys.argv[1:]); sys.exit(0 if c > h and c > a else 1)" "$c0" "$h_back" "$a_back" ||
    fail "FD 0 started draining at $c0, before vm_2 ($h_back) or FD 1 ($a_back) was back"
# Its VM: recover ordered when it ended, run although never prepared.
hist_has ".kind == \"recover_ordered\" and .data.event_id == \"$H\" and .data.vms == [\"vm_2\"]" ||
    fail "no recover ordered for vm_2 after the host failure"
wait_for 5 hist_has ".kind == \"hook_progress\" and .data.event_id == \"$H\" and .data.phase == \"recover\" and .data.state == \"done\"" ||
    fail "vm_2's recover was not reported"
[ "$(grep " $H " "$HOOKLOG" | cut -d' ' -f1-3 | tr '\n' ' ')" = "start recover vm_2 end recover vm_2 " ] ||
    fail "hooks for the host failure: $(grep " $H " "$HOOKLOG")"
ok "host failure: forced, no POST, FD 1 still approved, FD 0 waited for both, vm_2 recovered"

# --- 2. cancelled while vm_1 is drained and vm_4 still preparing (its prepare ends only once
#     the cancel was accepted)
write_hook 4 0.3 none "$(gate release cancelled)"
D=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 10 sh -c "grep -q '^end prepare vm_1 $D ' '$HOOKLOG' && grep -q '^start prepare vm_4 $D ' '$HOOKLOG'" ||
    fail "vm_1 not drained, or vm_4 not preparing, for $D: $(grep " $D " "$HOOKLOG")"
grep -q "^start prepare vm_4 $D " "$HOOKLOG" && ! grep -q "^end prepare vm_4 $D " "$HOOKLOG" ||
    fail "vm_4 not preparing when the event is cancelled"
curl -sS -f -X DELETE "$B/control/events/$D" >/dev/null || fail "cancel refused"
release cancelled
wait_for 10 sh -c "grep -q '^end recover vm_1 $D ' '$HOOKLOG' && grep -q '^end recover vm_4 $D ' '$HOOKLOG'" ||
    fail "cancelled event's VMs not recovered: $(grep " $D " "$HOOKLOG")"
hist_has ".kind == \"event_ended\" and .data.event_id == \"$D\" and .data.how == \"cancelled\"" ||
    fail "decision log: cancellation not recorded"
write_hook 4 0.3
E=$(new_event '{"EventType":"Reboot","Resources":["vm_2","vm_5"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 20 ev_over "$E" || fail "the next event did not go through: $(ctl events)"
wait_for 10 hooks_settled || fail "hooks did not settle"
check 3 --events 5
ok "cancelled: no POST, drained and preparing VMs recovered after it; the next event went through"
coord_stop
