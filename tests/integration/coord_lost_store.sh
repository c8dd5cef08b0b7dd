#!/usr/bin/env bash
# End to end (issue 9, case 7): a coordinator whose store is lost leads again. After two
# restarts the coordinator leads term 3 and an event goes through, so the agents have seen
# term 3. Then its state directory is wiped: it starts again at term 1, hears term 3 from the
# agents, adopts it and leads term 4 (Raft's rule); a new event is drained, approved once and
# recovered. (Before the fix it stayed at term 1 and the agents refused every order of it as
# stale: the new event was never drained.)
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
coord_start
coord_stop
coord_start
coord_stop
coord_start
[ "$(ctl status --json | jq .term)" -eq 3 ] || fail "two restarts, yet not term 3: $(ctl status --json | jq .term)"
wait_for 20 all_members_seen 6 || fail "members not all seen"
# 3000 simulated s of notice = 30 s of NotBefore.
A=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 20 ev_over "$A" || fail "A did not complete: $(ctl events)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
ok "term 3: A drained, approved and recovered"

coord_stop
rm -rf "$TMP/coord"
coord_start
B2=$(new_event '{"EventType":"Reboot","Resources":["vm_2","vm_5"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 15 grep -q "^start prepare vm_2 $B2 " "$HOOKLOG" ||
    fail "store wiped: the new event was never drained: $(ctl events; grep -h 'order refused' "$TMP"/agent_*.err | tail -3)"
terms=$(ctl history --json | jq -c '[.[] | select(.kind == "term") | .data.term]')
[ "$terms" = "[1,4]" ] || fail "the wiped coordinator's terms: $terms, expected [1,4]"
[ "$(ctl status --json | jq .term)" -eq 4 ] || fail "not leading term 4"
grep -q 'msg="newer term heard from an agent: adopted" term=3' "$TMP/coord.err" &&
    grep -q 'msg="role" role=leader term=4' "$TMP/coord.err" ||
    fail "no adoption of term 3 then election to term 4: $(grep -E 'role|adopted' "$TMP/coord.err" | tail -3)"
ok "store wiped: started at term 1, adopted the agents' term 3, leads term 4"

wait_for 30 ev_over "$B2" || fail "the new event did not complete: $(ctl events)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 2 --all-approved
ok "the new event drained, approved once and recovered under term 4"
coord_stop
