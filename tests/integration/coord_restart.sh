#!/usr/bin/env bash
# End to end with a crash: the coordinator is killed with SIGKILL in the middle of a drain and
# started again. It resumes from its store and the agents' reports (a newer term, nothing
# repeated, nothing forgotten): the rollout completes with the same safety properties, no
# hook ran twice, and the decision log shows both terms.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
# The kill below must land while a prepare of the second fault domain (vm_1, vm_4) runs: their
# prepares end only once the coordinator was killed, and report to the restarted one.
for i in 1 4; do write_hook $i 0.3 none "$(gate release killed)"; done
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen"
# 30000 simulated s of notice (300 s, more than the test lasts): every event is ours to
# approve (--all-approved), however long the restart and the members' return take
curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"

# Kill -9 while the second fault domain's prepare hooks run.
wait_for 60 sh -c "[ \$(grep -c '^start prepare' '$HOOKLOG') -ge 3 ]" || fail "second drain never started"
kill -9 "$COORD_PID"
wait "$COORD_PID" 2>/dev/null || true
COORD_PID=""
# (the wait above already saw 3 prepares start: in progress means one has not ended)
[ "$(grep -c '^start prepare' "$HOOKLOG")" -gt "$(grep -c '^end prepare' "$HOOKLOG" || true)" ] ||
    fail "no prepare hook was running: $(cat "$HOOKLOG")"
[ "$(grep -c '^end prepare' "$HOOKLOG")" -lt 4 ] || fail "killed too late: the drain had finished"
release killed
ok "coordinator killed (SIGKILL) in the middle of a drain"
sleep 1
coord_start
[ "$(ctl status --json | jq .term)" -eq 2 ] || fail "the restarted coordinator does not lead term 2"
ok "restarted as leader of term 2"

wait_for 90 completed_ge 3 || fail "rollout not complete after restart: $(ctl status)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 3 --all-approved
terms=$(ctl history --json | jq -c '[.[].term] | unique')
[ "$terms" = "[1,2]" ] || fail "decision log terms: $terms"
# No prepare order of the first term was decided again in the second.
dup=$(ctl history --json | jq '[.[] | select(.kind == "prepare_ordered") | .data.event_id + "/" + .data.vms[0]] | group_by(.) | map(select(length > 1)) | length')
[ "$dup" -eq 0 ] || fail "$dup drains ordered twice"
ok "after kill -9 and restart: rollout completes, one POST per event, no drain repeated or forgotten"
coord_stop
