#!/usr/bin/env bash
# End to end (issue 9, case 3): after a restart the coordinator plans nothing — no order, no
# approval, no member_down alert — until every member reported or --start-grace passed.
# vm_1 (FD 1) is preparing for event A when the coordinator is killed (-9); meanwhile A grows
# to [vm_1, vm_4] (vm_4 in FD 1 too) and vm_4's agent is frozen (SIGSTOP). The coordinator
# restarts with a 30 s grace: vm_1's prepare ends, yet nothing is approved and no alert is
# raised while vm_4 has not spoken. Once vm_4's agent runs again, vm_4 is drained and A is
# approved once, after vm_4's prepare. (Without the grace vm_4 was skipped as dead, never
# ordered, and A approved while vm_4's agent was still stopped.)
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
prepare_hold 1 # vm_1's prepare goes on until the coordinator has restarted
write_hook 4 1
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen"

# 6000 simulated s of notice = 60 s: A never starts at NotBefore during the test.
A=$(new_event '{"EventType":"Reboot","Resources":["vm_1"],"NoticeSeconds":6000,"DurationInSeconds":30}')
wait_for 10 grep -q "^start prepare vm_1 $A " "$HOOKLOG" || fail "vm_1's prepare never started"
coord_crash
agent_freeze 4
ev_patch "$A" '{"Resources":["vm_1","vm_4"]}'
ok "coordinator killed (SIGKILL) while vm_1 prepares; A grew to [vm_1, vm_4]; vm_4's agent stopped"

coord_start --start-grace 30
T=$(ctl status --json | jq .term)
prepare_release 1
wait_for 10 grep -q "^end prepare vm_1 $A " "$HOOKLOG" || fail "vm_1's prepare never ended"
# The restarted coordinator has all it needs to approve, were vm_4 skipped as dead: the grown
# event (from the other members) and vm_1's result. Without the grace it POSTed at once;
# give it time to act wrongly.
would_approve() {
    ctl status --json | jq -e ".events[] | select(.EventId == \"$A\") |
        select(.drains.vm_1 == \"prepared\" and (.resources | index(\"vm_4\")))" >/dev/null
}
wait_for 10 would_approve || fail "A grown and vm_1 prepared not known: $(ctl status --json | jq -c .events)"
sleep 3
[ "$(tl_count '.kind == "post"')" -eq 0 ] || fail "approved while vm_4 has not reported: $(jq -c 'select(.kind == "post")' "$TL")"
[ -z "$(hist ".kind == \"alert\" and .term == $T")" ] || fail "alerts during the start grace: $(hist ".kind == \"alert\" and .term == $T")"
[ -z "$(first_hook start prepare vm_4 "$A")" ] || fail "vm_4 prepared while its agent was stopped?"
[ "$(ctl status --json | jq .starting)" = true ] || fail "the start grace ended without vm_4"
ok "restarted (term $T): vm_1 prepared, vm_4 silent: no POST, no alert, still starting"

agent_thaw 4
wait_for 20 grep -q "^end prepare vm_4 $A " "$HOOKLOG" || fail "vm_4 never prepared: $(ctl events)"
wait_for 30 ev_over "$A" || fail "A did not complete: $(ctl events)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 1 --all-approved
post=$(jq -r "select(.kind == \"post\" and .status == 200) | .wall" "$TL")
awk -v p="$post" -v e="$(first_hook end prepare vm_4 "$A")" 'BEGIN { exit !(p > e) }' ||
    fail "A approved at $post, before vm_4's prepare ended"
grep -q 'start grace over: planning.*why="every member reported"' "$TMP/coord.err" ||
    fail "the grace did not end when every member reported: $(grep 'start grace' "$TMP/coord.err")"
[ -z "$(hist ".kind == \"alert\" and .data.alert == \"member_down\" and .term == $T")" ] ||
    fail "member_down alerts after the restart: $(hist ".kind == \"alert\" and .term == $T")"
ok "vm_4 back: drained, then A approved once after its prepare; no member_down"
coord_stop
