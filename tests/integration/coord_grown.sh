#!/usr/bin/env bash
# End to end (issue 9, case 5): an event's own fault domains never block it. Event A on
# [vm_1] (FD 1) is draining when Azure grows it to [vm_1, vm_2] (vm_2 in FD 2). A is now
# alone wider than max-fault-domains (1): it goes alone (ALERT too_wide), vm_2 is drained
# while vm_1 still is, A is approved once after both prepares, completes, and both VMs are
# recovered. (Before the fix A's own FD 1 counted as busy for vm_2: vm_2 was never ordered
# and the approval waited for it until Azure started A at NotBefore.)
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
prepare_hold 1 # vm_1 drains until the test has seen vm_2 drained too
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen"

# 3000 simulated s of notice = 30 s of NotBefore.
A=$(new_event '{"EventType":"Reboot","Resources":["vm_1"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 10 grep -q "^start prepare vm_1 $A " "$HOOKLOG" || fail "vm_1's prepare never started"
ev_patch "$A" '{"Resources":["vm_1","vm_2"]}'
ok "A grew to [vm_1, vm_2] while vm_1 (FD 1) drains"

wait_for 15 grep -q "^start prepare vm_2 $A " "$HOOKLOG" ||
    fail "vm_2 (FD 2) never ordered to prepare: $(ctl events)"
[ "$(tl_count '.kind == "post"')" -eq 0 ] || fail "A approved while vm_1 still drains"
wait_for 5 hist_has ".kind == \"alert\" and .data.alert == \"too_wide\" and .data.event_id == \"$A\"" ||
    fail "no too_wide alert: $(hist '.kind == "alert"')"
ok "vm_2 drained for A while vm_1 still is (too_wide: A goes alone)"

prepare_release 1
wait_for 30 ev_over "$A" || fail "A did not complete: $(ctl events)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 1 --all-approved
post=$(jq -r "select(.kind == \"post\" and .status == 200) | .wall" "$TL")
for vm in vm_1 vm_2; do
    awk -v p="$post" -v e="$(first_hook end prepare "$vm" "$A")" 'BEGIN { exit !(p > e) }' ||
        fail "A approved at $post, before $vm's prepare ended"
    grep -q "^end recover $vm $A " "$HOOKLOG" || fail "$vm not recovered"
done
ok "A approved once after both prepares, completed, vm_1 and vm_2 recovered"
coord_stop
