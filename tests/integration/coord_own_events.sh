#!/usr/bin/env bash
# End to end: events that only their own VM can see (the "GPU, one fault domain" case: every
# VM's IMDS shows only the events naming it, imds-sim --own-events-only). The coordinator
# (vm_0) cannot see vm_5's Reboot, so it delegates the approval to vm_5's agent (approve_via):
# exactly one successful POST for it, made by vm_5, after vm_5 prepared; an event on vm_0's
# own fault domain is approved by vm_0 itself. Every VM recovered.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100 \
    --own-events-only vm_0,vm_1,vm_2,vm_3,vm_4,vm_5
set_start 6
# The leader POSTs an event itself only once its own agent has reported it; until then it
# delegates, correctly too, to a member that sees it (vm_3 for vm_0 and vm_3's event). vm_0's
# prepare ends only after its agent fetched a document holding the event, which that agent
# sends to the coordinator before the end of its prepare: the approval, after both prepares,
# finds vm_0 among the members that see it.
write_hook 0 0.3 none "$(gate fetched vm_0)"
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen"

V=$(new_event '{"EventType":"Reboot","Resources":["vm_5"],"NoticeSeconds":1500,"DurationInSeconds":30}')
S=$(new_event '{"EventType":"Reboot","Resources":["vm_0","vm_3"],"NoticeSeconds":1600,"DurationInSeconds":30}')
wait_for 30 ev_over "$V" "$S" || fail "events not over: $(ctl events)"
wait_for 10 hooks_settled || fail "hooks did not settle"
check 3 --events 2 --all-approved
by=$(jq -r "select(.kind == \"post\" and .status == 200 and (.events | index(\"$V\"))) | .vm" "$TL" | tr '\n' ' ')
[ "$by" = "vm_5 " ] || fail "vm_5's event approved by: '$by' (expected one POST by vm_5)"
hist_has ".kind == \"approval_intent\" and .data.via == \"vm_5\" and .data.event_ids == [\"$V\"]" ||
    fail "decision log: no approval delegated to vm_5: $(hist '.kind == "approval_intent"')"
via=$(hist ".kind == \"approval_intent\" and .data.via == \"vm_5\"" | jq .index)
hist_has ".kind == \"approval_answer\" and .data.intent == $via and .data.rc == 0 and .data.http_status == 200" ||
    fail "decision log: delegated approval's answer not recorded"
by=$(jq -r "select(.kind == \"post\" and .status == 200 and (.events | index(\"$S\"))) | .vm" "$TL" | tr '\n' ' ')
[ "$by" = "vm_0 " ] || fail "vm_0's own event approved by: '$by'"
ok "event seen only by vm_5: approval delegated, one POST by vm_5; vm_0's own event POSTed by vm_0"
coord_stop
