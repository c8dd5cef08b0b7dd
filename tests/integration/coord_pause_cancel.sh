#!/usr/bin/env bash
# End to end: an event cancelled while every VM is drained (approvals paused with
# `schedcoordctl pause`): never approved, both VMs recovered after the cancellation. Then a
# kill -9 and restart of the coordinator: the agents report their results again, and the
# store still has the times the hooks really ran (prepare finished before recover started), and
# the pause holds (a new event waits). After `resume`, it is drained and approved normally.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
# The pause below must land while D drains: once both prepares ended, D would be approved (and
# could no longer be cancelled). vm_1's and vm_4's prepares end only once the pause is in place.
for i in 1 4; do write_hook $i 0.3 none "$(gate release paused)"; done
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen"

D=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 10 sh -c "grep -q '^start prepare vm_1 $D ' '$HOOKLOG' && grep -q '^start prepare vm_4 $D ' '$HOOKLOG'" ||
    fail "no drain: $(cat "$HOOKLOG")"
ctl pause >/dev/null
release paused
wait_for 10 sh -c "[ \$(grep -c '^end prepare' '$HOOKLOG') -eq 2 ]" || fail "not drained"
paused() { ctl events >"$TMP/events.txt" && grep -qF "waiting for: paused: no approval" "$TMP/events.txt"; }
wait_for 5 paused || fail "events does not say paused: $(cat "$TMP/events.txt")"
curl -sS -f -X DELETE "$B/control/events/$D" >/dev/null || fail "cancel refused"
wait_for 10 sh -c "[ \$(grep -c '^end recover' '$HOOKLOG') -eq 2 ]" || fail "not recovered: $(cat "$HOOKLOG")"
[ "$(tl_count '.kind == "post"')" -eq 0 ] || fail "a POST for a paused, cancelled event"
ok "cancelled while drained and paused: no POST, both VMs recovered"

kill -9 "$COORD_PID"
wait "$COORD_PID" 2>/dev/null || true
COORD_PID=""
coord_start
sleep 2 # the agents report their results to the new term
bad=$(ctl status --json | jq -c "[.events[] | select(.EventId == \"$D\") | .drain_detail | to_entries[]
    | select(.value.prepare.finished_ms > .value.recover.started_ms) | .key]")
[ "$bad" = "[]" ] || fail "after restart the store says these VMs finished preparing after recovering: $bad"
[ "$(ctl status --json | jq -r ".events[] | select(.EventId == \"$D\") | .drain_detail.vm_1.prepare.finished_ms")" != null ] ||
    fail "no drain detail for the cancelled event"
ok "after kill -9 and restart: hook times as they were"

# The operator's pause outlives the restart: a new event is neither drained nor approved.
[ "$(ctl status --json | jq .paused)" = true ] || fail "the restart forgot the operator's pause"
grep -q 'msg="approvals still paused by the operator"' "$TMP/coord.err" || fail "no log of the kept pause"
E=$(new_event '{"EventType":"Reboot","Resources":["vm_2","vm_5"],"NoticeSeconds":3000,"DurationInSeconds":30}')
held() { ctl events >"$TMP/events.txt" && grep -q "$E" "$TMP/events.txt" && grep -qF "paused: no new drain" "$TMP/events.txt"; }
wait_for 10 held || fail "the new event is not held by the pause: $(cat "$TMP/events.txt")"
sleep 1
[ -z "$(first_hook start prepare vm_2 "$E")" ] || fail "drained while paused"
[ "$(tl_count '.kind == "post"')" -eq 0 ] || fail "a POST while paused"
ok "the pause survives kill -9 and restart"

ctl resume >/dev/null
wait_for 20 ev_over "$E" || fail "the next event did not go through: $(ctl events)"
wait_for 10 hooks_settled || fail "hooks did not settle"
check 3 --events 2
ok "resumed: the next event approved once after its drain"
coord_stop
