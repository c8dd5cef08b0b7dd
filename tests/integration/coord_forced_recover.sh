#!/usr/bin/env bash
# End to end: a VM impacted without a prepare is re-checked, and the next fault domain waits
# for it (issue 9, case 9).
#  A host failure on vm_3 (fault domain 0) while nothing is drained; meanwhile an event for
#  fault domain 1 is scheduled. When the host failure is over, vm_3's recover hook runs with
#  SCHEDCOORD_PREPARED=0 (and "prepared": false on stdin); it takes 3 s, and fault domain 1's
#  first prepare starts only after it finished.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 5 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 5
write_hook 3 3 # vm_3's hooks take 3 s
coord_start
wait_for 20 all_members_seen 5 || fail "members not all seen"

H=$(new_event '{"EventType":"Reboot","Resources":["vm_3"],"Status":"Started","DurationInSeconds":400}')
wait_for 5 member_is vm_3 impacted || fail "vm_3 not impacted: $(ctl status)"
E=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 40 ev_over "$H" "$E" || fail "events not over: $(ctl events)"
wait_for 10 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"

grep -q "^recover vm_3 $H prepared=0 attempt=1 json={.*\"prepared\":false}$" "$HOOKENV" ||
    fail "vm_3's recover after the host failure did not run unprepared: $(cat "$HOOKENV")"
! grep -q "^prepare vm_3 $H " "$HOOKENV" || fail "a prepare ran for the host failure"
grep -q "^recover vm_1 $E prepared=1 " "$HOOKENV" || fail "vm_1's recover not told it was prepared"
wait_for 5 hist_has ".kind == \"hook_progress\" and .data.event_id == \"$H\" and .data.phase == \"recover\" and .data.state == \"done\"" ||
    fail "the coordinator did not record vm_3's recover"
h_end=$(jq -r "select(.kind == \"completed\" and .event == \"$H\") | .wall" "$TL")
r_start=$(first_hook start recover vm_3 "$H")
r_end=$(first_hook end recover vm_3 "$H")
e_start=$(awk -v e="$E" '$1 == "start" && $2 == "prepare" && $4 == e { print $5 }' "$HOOKLOG" | sort -n | head -1)
[ -n "$r_end" ] && [ -n "$e_start" ] || fail "no recover of vm_3 or no prepare for $E: $(cat "$HOOKLOG")"
python3 -c "import sys; h, rs, re, e = map(float, sys.argv[1:]); sys.exit(0 if h <= rs and re < e else 1)" \
    "$h_end" "$r_start" "$r_end" "$e_start" ||
    fail "host failure over at $h_end, vm_3 recovered $r_start..$r_end, FD 1 prepared at $e_start"
check 3 --events 2
ok "host failure: vm_3 recovered unprepared (SCHEDCOORD_PREPARED=0) after it, FD 1 drained only then"
coord_stop
