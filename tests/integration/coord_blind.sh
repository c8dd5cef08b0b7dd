#!/usr/bin/env bash
# End to end: a member whose agent runs but whose IMDS stops answering (here the simulator
# fails every request of vm_2; in Azure: throttling, an IMDS outage, a proxy in the way, a VM
# deleted under a still-running agent) is *blind*. Its last document still holds the event, and
# must not keep it alive for ever: without that rule FD 1's Reboot never ends for the
# coordinator and vm_1 is never recovered. With --imds-stale 2 the coordinator stops counting
# vm_2 as a witness (status: alive, imds_stale; `ctl status`: blind), ends the event once the
# others' IMDS dropped it, recovers vm_1, and counts vm_2 again when its IMDS answers. When
# the leader's own IMDS is the silent one, it approves through a member whose IMDS answers.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 3 --fault-domains 3 --time-scale 100 --complete-after 100 --rate-limit 0
set_start 3
coord_start --imds-stale 2
wait_for 20 all_members_seen 3 || fail "members not all seen"

A=$(new_event '{"EventType":"Reboot","Resources":["vm_1"],"NoticeSeconds":3000,"DurationInSeconds":30}')
inc=$(curl -sS "$B/control/state" | jq '.vms[] | select(.name == "vm_2") | .incarnation')
# vm_2's agent has read the document holding the event (and reported it) before going blind
wait_for 10 sh -c "[ \$(jq -c 'select(.kind == \"get\" and .vm == \"vm_2\" and .status == 200 and .incarnation >= $inc)' '$TL' | wc -l) -ge 1 ]" ||
    fail "vm_2 never read the event"
sleep 1
curl -sS -f -d '{"vm":"vm_2","answer":500,"count":1000000}' "$B/control/faults" >/dev/null || fail "fault"

wait_for 30 ev_over "$A" || fail "event not over in the simulator"
wait_for 20 grep -q "^end recover vm_1 $A " "$HOOKLOG" ||
    fail "vm_1 never recovered: the blind member's stale document kept the event alive ($(ctl events))"
check 3 --events 1 --all-approved
ok "the event ended without the blind member's vote; vm_1 recovered"

wait_for 10 grep -q "IMDS silent.*member=vm_2" "$TMP/coord.err" || fail "vm_2 never declared blind"
st=$(ctl status --json | jq -c '.members[] | select(.name == "vm_2") | [.alive, .imds_stale]')
[ "$st" = "[true,true]" ] || fail "vm_2 in status: $st (expected alive and imds_stale)"
ctl status | grep -Eq '^vm_2 .* blind *$' || fail "ctl status does not say vm_2 is blind: $(ctl status)"
ok "vm_2's agent alive, its IMDS silent: blind (log, status --json, status)"

curl -sS -f -d '{"vm":"vm_2","answer":500,"count":0}' "$B/control/faults" >/dev/null || fail "clear fault"
# 35 s: its agent backs off after each failed poll, up to 30 s
wait_for 35 grep -q "IMDS answers again.*member=vm_2" "$TMP/coord.err" || fail "vm_2 never a witness again"
[ "$(ctl status --json | jq '.members[] | select(.name == "vm_2") | .imds_stale')" = false ] ||
    fail "vm_2 still blind in status"
ok "vm_2 is a witness again once its IMDS answers"

# Our own IMDS goes silent (vm_0: the leader's) after it showed the next event: the leader
# cannot POST through it, so a member whose IMDS answers approves (approve_via), instead of
# our POSTs failing until Azure starts the event at NotBefore. vm_2's prepare ends only once the
# coordinator declared vm_0 blind, so the approval is due while vm_0 is blind.
write_hook 2 0.3 none "$(gate release blind)"
C=$(new_event '{"EventType":"Reboot","Resources":["vm_2"],"NoticeSeconds":3000,"DurationInSeconds":30}')
inc=$(curl -sS "$B/control/state" | jq '.vms[] | select(.name == "vm_0") | .incarnation')
wait_for 10 sh -c "[ \$(jq -c 'select(.kind == \"get\" and .vm == \"vm_0\" and .status == 200 and .incarnation >= $inc)' '$TL' | wc -l) -ge 1 ]" ||
    fail "vm_0 never read the event"
curl -sS -f -d '{"vm":"vm_0","answer":500,"count":1000000}' "$B/control/faults" >/dev/null || fail "fault"
wait_for 10 grep -q "IMDS silent.*member=vm_0" "$TMP/coord.err" || fail "vm_0 never declared blind"
release blind
wait_for 20 ev_over "$C" || fail "not approved in time (NotBefore is 30 s away): $(ctl events)"
[ "$(curl -sS "$B/control/events/$C" | jq -r .started_how)" = approved ] ||
    fail "the event was not started by an approval: $(curl -sS "$B/control/events/$C" | jq -c '{started_how, approvals}')"
by=$(jq -r "select(.kind == \"post\" and .status == 200 and (.events | index(\"$C\"))) | .vm" "$TL" | tr '\n' ' ')
[ "$by" = "vm_2 " ] || fail "approved by: '$by' (expected one POST by vm_2)"
grep -q "approval delegated.*via=vm_2.*first=$C" "$TMP/coord.err" || fail "no delegation logged"
wait_for 20 grep -q "^end recover vm_2 $C " "$HOOKLOG" || fail "vm_2 never recovered"
check 3 --events 2 --all-approved
ok "our own IMDS silent: approved through vm_2, once, long before NotBefore"
curl -sS -f -d '{"vm":"vm_0","answer":500,"count":0}' "$B/control/faults" >/dev/null || fail "clear fault"
coord_stop
