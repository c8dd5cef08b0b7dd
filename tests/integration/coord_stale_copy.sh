#!/usr/bin/env bash
# End to end (issue 9, safety 1): a stale copy of an event never moves it backwards.
#
# Event E on [vm_1] (fault domain 1). vm_5 reads it, then its IMDS fails for good (blind): its
# agent keeps that document. E grows to [vm_1, vm_4] (PATCH /control/events/<id>: needs
# imds-sim's PATCH) and vm_4 is ordered to prepare; its hook waits for the test's go, vm_1's
# ends. Meanwhile the coordinator restarts; vm_5's agent reconnects last (held with SIGSTOP
# until the others are back) and re-sends its old document, read before the growth. Without
# the merge rule that copy shrank Resources back to [vm_1], dropped vm_4, and the approval went
# out while vm_4's prepare hook still ran. Now the copy is a StaleCopy and the POST comes only
# after vm_4's prepare (released once the copy was handled: logged StaleCopy, or a POST).
# Then, E over and recovered (its registry entry gone), the coordinator restarts again and vm_5
# re-sends the same old document: E must not come back (a tombstone: EndedCopy) — no new
# event, no second POST, nothing in schedcoordctl events but the ended E.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

# a stopped agent would not die at the end
sc_on_exit() {
    kill -CONT "${AGENT_PIDS[@]}" 2>/dev/null || true
    sc_kill "${AGENT_PIDS[@]}" "$COORD_PID"
}

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100 --rate-limit 0
set_start 6
coord_start --imds-stale 2
wait_for 20 all_members_seen 6 || fail "members not all seen"
# vm_1's and vm_4's prepares each end when the test says so
write_hook 1 0.3 none "while [ ! -e $TMP/go_vm_1 ]; do sleep 0.1; done"
write_hook 4 0.3 none "while [ ! -e $TMP/go_vm_4 ]; do sleep 0.1; done"

log_count() { grep -c "$1" "$TMP/coord.err" || true; }
# restart_coord_vm5_last [CLOSED]: the coordinator stops and starts again with vm_5's agent
# held; once the five others are alive (and, given CLOSED, E is a tombstone again: closed in the
# replayed state), vm_5 reconnects and re-sends its old document, before its first heartbeat
# (which says it is blind)
restart_coord_vm5_last() {
    local blind closed
    blind=$(log_count "IMDS silent.*member=vm_5")
    closed=$(log_count "registry rebuilt.*tombstones=[1-9]")
    kill -STOP "${AGENT_PIDS[5]}"
    coord_stop
    coord_start --imds-stale 2
    wait_for 20 all_members_seen 5 || fail "the other members did not come back"
    [ -z "${1:-}" ] || wait_for 10 sh -c "[ \$(grep -c 'registry rebuilt.*tombstones=[1-9]' '$TMP/coord.err') -gt $closed ]" ||
        fail "E not a tombstone again after the restart"
    kill -CONT "${AGENT_PIDS[5]}"
    wait_for 20 sh -c "[ \$(grep -c 'IMDS silent.*member=vm_5' '$TMP/coord.err') -gt $blind ]" ||
        fail "vm_5 did not come back as a blind member"
}
vm5_read_e() { [ "$(tl_count ".kind == \"get\" and .vm == \"vm_5\" and .status == 200 and .incarnation >= $inc")" -ge 1 ]; }
# vm_5's copy handled: ignored (StaleCopy), or applied (E, [vm_1] prepared, is then approved)
copy_handled() {
    grep -q "event=$E change=StaleCopy" "$TMP/coord.err" ||
        [ "$(tl_count ".kind == \"post\" and (.events | index(\"$E\"))")" -ge 1 ]
}

E=$(new_event '{"EventType":"Reboot","Resources":["vm_1"],"NoticeSeconds":6000,"DurationInSeconds":30}')
inc=$(curl -sS "$B/control/state" | jq '.vms[] | select(.name == "vm_5") | .incarnation')
wait_for 10 vm5_read_e || fail "vm_5 never read E"
wait_for 10 grep -q "^start prepare vm_1 $E " "$HOOKLOG" || fail "vm_1 never ordered to prepare"
curl -sS -f -d '{"vm":"vm_5","answer":500,"count":1000000}' "$B/control/faults" >/dev/null || fail "fault"
wait_for 10 grep -q "IMDS silent.*member=vm_5" "$TMP/coord.err" || fail "vm_5 never declared blind"
ok "vm_5 read E on [vm_1], then went blind"

curl -sS -f -X PATCH -d '{"Resources":["vm_1","vm_4"]}' "$B/control/events/$E" >/dev/null ||
    fail "PATCH /control/events/$E refused (imds-sim needs PATCH)"
wait_for 15 grep -q "^start prepare vm_4 $E " "$HOOKLOG" || fail "vm_4 never ordered to prepare"
touch "$TMP/go_vm_1"
wait_for 10 grep -q "^end prepare vm_1 $E " "$HOOKLOG" || fail "vm_1's prepare did not end"
ok "E grew to [vm_1, vm_4]; vm_1 prepared, vm_4 prepares"

restart_coord_vm5_last
wait_for 10 copy_handled || fail "vm_5's old copy of E never handled"
touch "$TMP/go_vm_4"
ok "vm_5's old copy of E re-sent while vm_4 prepares"

wait_for 30 ev_over "$E" || fail "E not over: $(ctl events)"
post=$(jq -r "select(.kind == \"post\" and .status == 200 and (.events | index(\"$E\"))) | .wall" "$TL" | head -1)
end4=$(first_hook end prepare vm_4 "$E")
[ -n "$post" ] && [ -n "$end4" ] || fail "no approval ($post) or vm_4's prepare never ended ($end4)"
python3 -c "import sys; sys.exit(0 if float('$post') >= float('$end4') else 1)" ||
    fail "E approved at $post while vm_4's prepare hook ran (it ended at $end4): the stale copy dropped vm_4"
grep -q "event change.*event=$E change=StaleCopy" "$TMP/coord.err" || fail "vm_5's copy was not seen as stale"
ok "the stale copy changed nothing: E approved after vm_4's prepare"

wait_for 30 grep -q "^end recover vm_4 $E " "$HOOKLOG" || fail "vm_4 never recovered"
wait_for 30 grep -q "event closed.*event=$E" "$TMP/coord.err" || fail "E never closed"
restart_coord_vm5_last closed
term=$(ctl status --json | jq .term)
[ -z "$(hist ".kind == \"event_seen\" and .term == $term and .data.event.EventId == \"$E\"")" ] ||
    fail "E came back as a new event after it ended: $(ctl events)"
shown=$(ctl events --json | jq -c ".events[] | select(.EventId == \"$E\") | [.status, .ended_how, .approval]")
[ "$shown" = '["Started","completed",null]' ] || fail "schedcoordctl events shows E as $shown"
member_is vm_1 healthy || fail "vm_1 is busy again: $(ctl status)"
check 3 --events 1 --all-approved
grep -q "event change.*event=$E change=EndedCopy" "$TMP/coord.err" || fail "vm_5's copy of the ended E was not seen"
ok "after E ended, the blind vm_5's old copy did not bring it back (one POST, FD 1 free)"
curl -sS -f -d '{"vm":"vm_5","answer":500,"count":0}' "$B/control/faults" >/dev/null || fail "clear fault"
coord_stop
