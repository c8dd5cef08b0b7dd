#!/usr/bin/env bash
# End to end: a real event arriving during a rehearsal wins. 6 VMs in 3 FDs on imds-sim; a
# Reboot rehearsal is draining FD 0 (vm_0's prepare held by the test, vm_3 drained) when a real
# Reboot of FD 1 arrives: the rehearsal stops and says why, its events end, FD 0's VMs are
# recovered (vm_0 once its prepare ended), the rest of the set is never drained for it and nothing
# is POSTed for it; the real event waits for FD 0 to be back (rule 2), is drained, approved once
# and completes, its VMs recovered (check.py, with the rehearsal's windows). rehearse reports the
# stop and exits 1. Then a rehearsal interrupted by a kill -9 of the coordinator goes on from
# its log after the restart and ends.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen: $(ctl status --json | jq -c .members)"
hook_started() { [ -n "$(first_hook start "$@")" ]; }
hook_ended() { [ -n "$(first_hook end "$@")" ]; }

prepare_hold 0
ctl rehearse --json >"$TMP/report.json" 2>"$TMP/rehearse.err" &
RPID=$!
wait_for 20 hook_started prepare vm_0 rehearsal-1-fd0 || fail "rehearsal did not drain FD 0: $(ctl plan)"
wait_for 10 hook_ended prepare vm_3 rehearsal-1-fd0 || fail "vm_3 not drained"
ok "rehearsal draining fault domain 0 (vm_3 drained, vm_0's prepare held)"

E=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":30000,"DurationInSeconds":30}')
wait_for 10 hist_has ".kind == \"rehearsal\" and .data.state == \"stopped\" and (.data.why | contains(\"$E\"))" ||
    fail "rehearsal not stopped by $E: $(ctl history | tail -5)"
hist_has '.kind == "event_ended" and .data.event_id == "rehearsal-1-fd1" and .data.how == "cancelled"' ||
    fail "FD 1's rehearsal event not cancelled"
# the real event waits for fault domain 0 (vm_0 still preparing for the rehearsal)
ctl plan --json | jq -e --arg e "$E" '.events[] | select(.EventId == $e)
    | .class == "platform" and .queue_position == 1 and (.waiting_for | test("fault domain\\(s\\) 0 busy"))' \
    >/dev/null || fail "plan: $(ctl plan)"
! hook_started prepare vm_1 "$E" || fail "FD 1 drained while FD 0 was out"
ok "a real event stopped the rehearsal, and waits for fault domain 0 (plan says so)"

prepare_release 0
rc=0
wait "$RPID" || rc=$?
[ "$rc" -eq 1 ] || fail "rehearse exited $rc: $(cat "$TMP/rehearse.err")"
jq -e --arg e "$E" '.over and .stopped and (.why | contains($e)) and .not_recovered == 0
    and ([.vms[] | select(.ok) | .name] | sort) == ["vm_0", "vm_3"]
    and ([.vms[] | select(.status | test("stopped before its turn")) | .name] | length) == 4
    and (.text[0] | test("stopped after .*: real event .* arrived; every VM it prepared was recovered"))' \
    "$TMP/report.json" >/dev/null || fail "report: $(cat "$TMP/report.json")"
in_order "$(first_hook end prepare vm_0 rehearsal-1-fd0)" "$(first_hook start recover vm_0 rehearsal-1-fd0)" ||
    fail "vm_0 not recovered after its prepare: $(grep vm_0 "$HOOKLOG")"
hook_ended recover vm_3 rehearsal-1-fd0 || fail "vm_3 not recovered"
! grep -q "rehearsal-1-fd[12]" "$HOOKLOG" || fail "fault domains 1 and 2 drained for the rehearsal"
ok "rehearse reports the stop; every VM it prepared recovered, no other drained"

wait_for 60 completed_ge 1 || fail "the real event did not complete: $(ctl events)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 1 --all-approved
[ "$(tl_count '.kind == "post"')" -eq 1 ] &&
    [ "$(jq -c 'select(.kind == "post") | .events' "$TL")" = "[\"$E\"]" ] ||
    fail "POSTs: $(jq -c 'select(.kind == "post")' "$TL")"
ok "the real event served under the safety rules (one POST, after FD 0 was back)"

# interrupted by a crash instead: kill -9 of the coordinator while FD 2 drains for rehearsal 2;
# after the restart the rehearsal goes on from its log and ends (rehearse waited across it)
wait_for 20 ev_closed "$E" || fail "$E not closed: $(ctl events)"
prepare_hold 2
ctl rehearse --fault-domain 2 --json >"$TMP/report2.json" 2>"$TMP/rehearse2.err" &
RPID=$!
wait_for 20 hook_started prepare vm_2 rehearsal-2-fd2 || fail "rehearsal 2 did not drain FD 2"
coord_crash
coord_start
prepare_release 2
rc=0
wait "$RPID" || rc=$?
[ "$rc" -eq 0 ] || fail "rehearse 2 exited $rc: $(cat "$TMP/rehearse2.err")"
jq -e '.over and (.stopped | not) and ([.vms[] | select(.ok)] | length) == 2' "$TMP/report2.json" \
    >/dev/null || fail "report 2: $(cat "$TMP/report2.json")"
[ "$(grep -c '^start prepare .* rehearsal-2-fd2' "$HOOKLOG")" -eq 2 ] || fail "FD 2 prepared twice"
check 3 --events 1 --all-approved
[ "$(tl_count '.kind == "post"')" -eq 1 ] || fail "a POST for the rehearsal"
ok "a rehearsal goes on after a kill -9 of the coordinator, and ends"
coord_stop
