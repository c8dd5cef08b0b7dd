#!/usr/bin/env bash
# End to end: a leader whose loop stalls (a VM Freeze; SIGSTOP here) acts on nothing after it
# wakes until every member reported again (TILT, as after a start). While the coordinator is
# stopped for 4 s (--stall-s 1), event E (vm_2, FD 2) appears and vm_5's agent is stopped too.
# After SIGCONT the coordinator says it stalled and orders nothing — not E's prepare — while vm_5
# is silent, status saying "stalled"; once vm_5 speaks the stall grace ends, E is drained,
# approved once and recovered under the safety rules. (Without the check E's prepare was
# ordered as soon as the coordinator woke, on what it knew before the stall.)
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
coord_start --stall-s 1 --start-grace 60
wait_for 20 all_members_seen 6 || fail "members not all seen"
not_starting() { [ "$(ctl status --json | jq .starting)" = false ]; }
knows() { ctl status --json | jq -e ".events[] | select(.EventId == \"$1\")" >/dev/null; }
wait_for 10 not_starting || fail "the start grace did not end"

kill -STOP "$COORD_PID"
agent_freeze 5
# 6000 simulated s of notice = 60 s: E never starts at NotBefore during the test.
E=$(new_event '{"EventType":"Reboot","Resources":["vm_2"],"NoticeSeconds":6000,"DurationInSeconds":30}')
sleep 4 # the coordinator stopped past --stall-s; the agents see E meanwhile
kill -CONT "$COORD_PID"
cont=$(date +%s.%N)
wait_for 10 grep -q 'msg="stalled: acting again once every member reported"' "$TMP/coord.err" ||
    fail "the coordinator did not notice its stall: $(tail -5 "$TMP/coord.err")"
wait_for 10 knows "$E" || fail "E never reached the coordinator: $(ctl events)"
sleep 2 # give it time to act wrongly
[ "$(ctl status --json | jq .stalled)" = true ] || fail "status does not say stalled: $(ctl status --json | jq -c '{starting, stalled}')"
[ -z "$(hist ".kind == \"prepare_ordered\" and .data.event_id == \"$E\"")" ] ||
    fail "E's prepare ordered while vm_5 had not reported since the stall: $(hist '.kind == "prepare_ordered"')"
[ -z "$(first_hook start prepare vm_2 "$E")" ] || fail "vm_2 prepared after the stall, before the grace ended"
ok "stopped 4 s (> --stall-s 1): on waking, no order while vm_5 is silent; status says stalled"

agent_thaw 5
wait_for 20 grep -q 'stall grace over: planning.*why="every member reported"' "$TMP/coord.err" ||
    fail "the stall grace did not end when every member reported: $(grep 'grace' "$TMP/coord.err")"
wait_for 30 ev_over "$E" || fail "E did not complete: $(ctl events)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 1 --all-approved
ordered=$(hist ".kind == \"prepare_ordered\" and .data.event_id == \"$E\"" | jq -s '.[0].wall_ms / 1000')
awk -v o="$ordered" -v c="$cont" 'BEGIN { exit !(o > c) }' || fail "E ordered at $ordered, before the SIGCONT at $cont?"
ok "vm_5 back: the stall grace ended, E drained, approved once and recovered"
coord_stop
