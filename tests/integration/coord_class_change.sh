#!/usr/bin/env bash
# End to end (issue 9 case 2): an event whose class becomes "no drain" while it is drained.
# Z, a Freeze of unknown length (DurationInSeconds -1) on vm_1 and vm_4 (FD 1), is drained;
# with vm_1 prepared and vm_4's prepare still running, Azure changes it to a 5 s Freeze (below
# --freeze-threshold-s 9). Then:
#  - Z is approved at once (one POST), without waiting for vm_4's prepare;
#  - vm_1 and vm_4 stay drained (FD 1 busy) and are recovered after Z ended (vm_4 once its
#    prepare is done);
#  - Z closes;
#  - Q, queued in FD 2 behind Z, drains only after both are recovered, and is approved.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
# vm_1 prepared in 0.5 s, vm_4 prepares for 4 s: the change comes in between
write_hook 1 0.5
write_hook 4 4
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen"

Z=$(new_event '{"EventType":"Freeze","Resources":["vm_1","vm_4"],"NoticeSeconds":3000,"DurationInSeconds":-1}')
Q=$(new_event '{"EventType":"Reboot","Resources":["vm_2","vm_5"],"NoticeSeconds":4000,"DurationInSeconds":30}')
wait_for 10 sh -c "grep -q '^end prepare vm_1 $Z ' '$HOOKLOG' && grep -q '^start prepare vm_4 $Z ' '$HOOKLOG'" ||
    fail "Z not draining: $(cat "$HOOKLOG")"
wait_for 5 drain_is "$Z" vm_1 prepared || fail "vm_1 not shown prepared: $(ctl events)"
curl -sS -f -X PATCH -d '{"DurationInSeconds":5}' "$B/control/events/$Z" >/dev/null || fail "PATCH refused"
patched=$(tl_wall ".kind == \"updated\" and .event == \"$Z\"")
grep -q "^end prepare vm_4 $Z " "$HOOKLOG" && fail "vm_4's prepare ended before the change: the test's timing"
ok "Z (Freeze -1) drained on vm_1, draining on vm_4; changed to a 5 s Freeze"

z_started() { [ -n "$(started_how "$Z")" ]; }
wait_for 5 z_started || fail "Z not started after the change: $(ctl events)"
[ "$(started_how "$Z")" = approved ] || fail "Z started $(started_how "$Z"), not by our approval"
ok "Z approved after the change"

wait_for 15 sh -c "grep -q '^end recover vm_1 $Z ' '$HOOKLOG' && grep -q '^end recover vm_4 $Z ' '$HOOKLOG'" ||
    fail "Z's drained VMs not recovered: $(grep " $Z " "$HOOKLOG")"
z_end=$(tl_wall ".kind == \"completed\" and .event == \"$Z\"")
for z in vm_1 vm_4; do
    in_order "$z_end" "$(first_hook start recover "$z" "$Z")" || fail "$z recovered before Z ended ($z_end): $(grep " $Z " "$HOOKLOG")"
done
in_order "$(first_hook end prepare vm_4 "$Z")" "$(first_hook start recover vm_4 "$Z")" ||
    fail "vm_4 recovered before its prepare ended: $(grep " $Z " "$HOOKLOG")"
z_start=$(tl_wall ".kind == \"started\" and .event == \"$Z\"")
in_order "$patched" "$z_start" "$(first_hook end prepare vm_4 "$Z")" ||
    fail "Z not approved at once (changed $patched, started $z_start, vm_4 prepared $(first_hook end prepare vm_4 "$Z"))"
wait_for 10 ev_closed "$Z" || fail "Z not closed: $(ctl events)"
ok "Z approved before vm_4's prepare ended; vm_1 and vm_4 recovered after Z ended; Z closed"

wait_for 20 ev_over "$Q" || fail "Q did not go through: $(ctl events)"
[ "$(started_how "$Q")" = approved ] || fail "Q started $(started_how "$Q"), not by our approval"
for z in vm_1 vm_4; do
    for q in vm_2 vm_5; do
        in_order "$(first_hook end recover "$z" "$Z")" "$(first_hook start prepare "$q" "$Q")" ||
            fail "$q drained for Q before $z was recovered from Z: $(cat "$HOOKLOG")"
    done
done
wait_for 10 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 2 --all-approved
ok "Q (FD 2) drained after FD 1 was back, approved; one POST each"
coord_stop
