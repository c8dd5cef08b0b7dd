#!/usr/bin/env bash
# imds-sim's fabric: approval starts an event for every VM in Resources; NotBefore starts it
# unapproved; cancellation; host failure; a VM unreachable during its reboot and back after;
# completion; --time-scale; --approval-delay; Preempt and Terminate delete the VM for good;
# POST /control/vms/<vm>/recreate brings a deleted VM back.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# X=60: 60 simulated seconds are one real second. The impacts and delays below last several
# real seconds, so that the checks made while they last do not race a loaded machine.
sim_start --vms 6 --fault-domains 3 --time-scale 60 --complete-after 480 --rate-limit 0

# --- approval by one VM starts the event for every VM in Resources
id=$(create '{"EventType":"Reboot","Resources":["vm_0","vm_3"],"NoticeSeconds":3600,"DurationInSeconds":300}')
inc=$(imds vm_1 | jq .DocumentIncarnation)
eq "$(approve vm_5 "$id")" 200 "approve"
eq "$(ev_field "$id" EventStatus)" Started "Started after approval"
eq "$(ev_field "$id" started_how)" approved "how=approved"
eq "$(ev_field "$id" '[.impacts[].vm] | join(",")')" "vm_0,vm_3" "impacts for every Resource"
eq "$(timeline | jq -r --arg id "$id" '[.[] | select(.kind == "impact_start" and .event == $id) | .vm] | join(",")')" "vm_0,vm_3" "impact_start facts"
eq "$(imds vm_1 | jq .DocumentIncarnation)" $((inc + 1)) "incarnation +1 on Started"
eq "$(imds vm_1 | jq -r .Events[0].NotBefore)" "" "NotBefore empty"
ok "approval starts the event for every VM in Resources (how=approved)"

# --- a rebooting VM does not answer; it answers again when the impact (300 sim s = 5 s real)
#     is over, still Started until --complete-after (8 s real after the start)
rc=0; curl -s -m 2 -H Metadata:true "$B/vm_0/metadata/scheduledevents?api-version=$V" >/dev/null || rc=$?
[ "$rc" -eq 52 ] || [ "$rc" -eq 56 ] || fail "vm_0 answered during its reboot (curl rc $rc)"
eq "$(code -H Metadata:true "$B/vm_1/metadata/scheduledevents?api-version=$V")" 200 "vm_1 not impacted"
eq "$(state | jq -r '.vms[] | select(.name == "vm_3") | .impacted')" true "vm_3 impacted"
wait_for 10 sh -c "curl -sf -H Metadata:true '$B/vm_0/metadata/scheduledevents?api-version=$V' >/dev/null" || fail "vm_0 never came back"
eq "$(imds vm_0 | jq -r .Events[0].EventStatus)" Started "still Started after the impact"
eq "$(timeline | jq -r --arg id "$id" '[.[] | select(.kind == "impact_end" and .event == $id)] | length')" 2 "impact_end facts"
ok "VM unreachable during its reboot (empty reply), back after"

# --- it disappears --complete-after (480 sim s = 8 s) after it started
wait_for 10 sh -c "[ \"\$(curl -s -H Metadata:true '$B/vm_1/metadata/scheduledevents?api-version=$V' | jq '.Events | length')\" = 0 ]" || fail "never completed"
eq "$(ev_field "$id" EventStatus)" Completed "Completed in state"
eq "$(imds vm_1 | jq .DocumentIncarnation)" $((inc + 2)) "incarnation +1 on removal"
ok "completed event disappears (incarnation +1)"

# --- NotBefore passes: starts unapproved; --time-scale: a 15-minute notice at X=60 ~ 15 s,
#     here 3 simulated minutes = 3 s. NotBefore is real wall-clock time: the creation plus 3 s,
#     rounded up to the second. The creation time is the simulator's own (its `created` fact),
#     checked to lie between our clock readings around the call, so no bound depends on how
#     long the calls took.
# fact_ms ID KIND -> wall time (ms) of the event's first fact of that kind
fact_ms() { timeline | jq -r --arg id "$1" --arg k "$2" '[.[] | select(.kind == $k and .event == $id) | .wall * 1000 | round][0] // empty'; }
t0=$(now_ms)
id2=$(create '{"EventType":"Freeze","FaultDomain":2,"NoticeSeconds":180,"DurationInSeconds":5}')
nb=$(date -d "$(imds vm_1 | jq -r --arg id "$id2" '.Events[] | select(.EventId == $id) | .NotBefore')" +%s)
t0b=$(now_ms)
created=$(fact_ms "$id2" created)
[ -n "$created" ] || fail "no created fact for $id2"
((created - t0 >= -50 && t0b - created >= -50)) || fail "created at $created ms, not within our real-time readings [$t0, $t0b]"
((nb * 1000 - created >= 3000 && nb * 1000 - created < 4000)) || fail "NotBefore is real time, creation + 3 s rounded up: $((nb * 1000 - created)) ms after the creation"
wait_for 10 sh -c "[ \"\$(curl -s '$B/control/state' | jq -r '.events[] | select(.EventId == \"$id2\") | .EventStatus')\" = Started ]" || fail "NotBefore did not start it"
t1=$(now_ms)
started=$(fact_ms "$id2" started)
[ -n "$started" ] || fail "no started fact for $id2"
# not before NotBefore, by our clock and by the simulator's; its ticker may lag, not by 1 s
[ $((t1 - t0)) -ge 2900 ] || fail "started after $((t1 - t0)) ms, expected >= 3000"
((started - nb * 1000 >= 0 && started - nb * 1000 <= 1000)) || fail "started $((started - nb * 1000)) ms after NotBefore, expected 0 to 1000"
eq "$(ev_field "$id2" started_how)" not_before "how=not_before"
eq "$(ev_field "$id2" '.approvals | length')" 0 "no approval"
eq "$(ev_field "$id2" '[.impacts[].vm] | join(",")')" "vm_2,vm_5" "FaultDomain 2 = vm_2, vm_5"
eq "$(code -H Metadata:true "$B/vm_2/metadata/scheduledevents?api-version=$V")" 200 "a Freeze impact still answers"
ok "NotBefore starts it unapproved at real time notice/X (how=not_before, $((started - created)) ms after the creation)"

# --- cancellation while Scheduled
inc=$(imds vm_4 | jq .DocumentIncarnation)
id3=$(create '{"EventType":"Redeploy","Resources":["vm_4"]}')
eq "$(imds vm_4 | jq .DocumentIncarnation)" $((inc + 1)) "created"
eq "$(code -X DELETE "$B/control/events/$id3")" 200 "DELETE"
d=$(imds vm_4)
eq "$(echo "$d" | jq .DocumentIncarnation)" $((inc + 2)) "incarnation +1 on cancel"
eq "$(echo "$d" | jq --arg id "$id3" '[.Events[] | select(.EventId == $id)] | length')" 0 "cancelled event gone"
eq "$(ev_field "$id3" EventStatus)" Cancelled "Cancelled in state"
eq "$(timeline | jq --arg id "$id3" '[.[] | select(.event == $id) | .kind] | join(",")')" '"created,cancelled"' "no impact for a cancelled event"
eq "$(approve vm_4 "$id3")" 400 "approving a cancelled event"
ok "cancellation removes a Scheduled event without impact"

# --- host failure: directly Started, Reboot, no approval; its impact (300 sim s = 5 s real)
#     outlasts the checks below
id4=$(create '{"EventType":"Reboot","Resources":["vm_1"],"Status":"Started","DurationInSeconds":300}')
d=$(imds vm_4 | jq -c --arg id "$id4" '.Events[] | select(.EventId == $id)')
eq "$(echo "$d" | jq -r '[.EventStatus,.EventType,.NotBefore]|join("|")')" "Started|Reboot|" "host failure document"
eq "$(ev_field "$id4" started_how)" host_failure "how=host_failure"
eq "$(timeline | jq -r --arg id "$id4" '[.[] | select(.event == $id) | .kind] | join(",")')" "created,started,impact_start" "host failure facts"
rc=0; curl -s -m 2 -H Metadata:true "$B/vm_1/metadata/scheduledevents?api-version=$V" >/dev/null || rc=$?
[ "$rc" -eq 52 ] || [ "$rc" -eq 56 ] || fail "vm_1 answered during host failure (curl rc $rc)"
ok "host failure: created Started (Reboot, how=host_failure), VM unreachable"

# --- Preempt and Terminate delete the VM: its IMDS never answers again, even after the event
#     completed; no new event may name it; a fault domain left empty has nothing to maintain
idp=$(create '{"EventType":"Preempt","Resources":["vm_5"],"DurationInSeconds":0}')
idt=$(create '{"EventType":"Terminate","Resources":["vm_2"],"DurationInSeconds":0}')
eq "$(approve vm_0 "$idp")" 200 "approve the Preempt"
eq "$(approve vm_0 "$idt")" 200 "approve the Terminate"
eq "$(timeline | jq -c --arg p "$idp" --arg t "$idt" '[.[] | select(.kind == "impact_start" and (.event == $p or .event == $t)) | [.vm, .deleted]]')" \
    '[["vm_5",true],["vm_2",true]]' "impact_start says deleted"
# completed --complete-after (8 s real) after the approvals
wait_for 15 sh -c "[ \"\$(curl -s '$B/control/state' | jq -r '[.events[] | select(.EventId == \"$idp\" or .EventId == \"$idt\") | .EventStatus] | join(\",\")')\" = Completed,Completed ]" ||
    fail "Preempt/Terminate never completed"
eq "$(imds vm_0 | jq --arg p "$idp" --arg t "$idt" '[.Events[] | select(.EventId == $p or .EventId == $t)] | length')" 0 "completed: gone from the others' documents"
for vm in vm_2 vm_5; do
    rc=0; curl -s -m 2 -H Metadata:true "$B/$vm/metadata/scheduledevents?api-version=$V" >/dev/null || rc=$?
    [ "$rc" -eq 52 ] || [ "$rc" -eq 56 ] || fail "$vm answered after it was deleted (curl rc $rc)"
done
eq "$(state | jq -c '[.vms[] | select(.deleted) | .name]')" '["vm_2","vm_5"]' "deleted in state"
r=$(curl -s -w ' %{http_code}' -d '{"EventType":"Reboot","Resources":["vm_0","vm_5"]}' "$B/control/events")
[[ "$r" == *'"vm_5\" was deleted'*' 400' ]] || fail "an event naming a deleted VM: $r"
r=$(curl -s -w ' %{http_code}' -d '{"EventType":"Reboot","FaultDomain":2}' "$B/control/events")
[[ "$r" == *'no VM left'*' 400' ]] || fail "an event on an emptied fault domain: $r"
r=$(curl -s -w ' %{http_code}' -d '{"EventType":"Reboot","FaultDomains":[2]}' "$B/control/maintenance")
[[ "$r" == *'was deleted'*' 400' ]] || fail "a rollout of an emptied fault domain: $r"
first=$(curl -sS -f -d '{"EventType":"Reboot","FaultDomains":[2,0]}' "$B/control/maintenance" | jq -r '.EventIds[0]')
eq "$(ev_field "$first" '.Resources | join(",")')" "vm_0,vm_3" "a rollout skips the emptied fault domain"
ok "Preempt and Terminate delete the VM: unreachable for good, refused in new events, skipped by rollouts"

# --- a deleted VM re-created under its name (a Spot VM restarted, a VM re-created): it answers
#     again as a new VM (a new vmId, DocumentIncarnation from 1) and events may name it; not a
#     VM that is not deleted, nor one whose deleting impact still runs
# vm_state VM JQ-EXPR -> the VM in /control/state
vm_state() { state | jq -c --arg vm "$1" ".vms[] | select(.name == \$vm) | $2"; }
eq "$(code -X DELETE "$B/control/events/$first")" 200 "cancel the rollout's event: no event left to move incarnations"
old_id=$(vm_state vm_5 .vm_id)
eq "$(code -X POST "$B/control/vms/vm_0/recreate")" 409 "re-create a VM that is not deleted"
eq "$(code -X POST "$B/control/vms/vm_9/recreate")" 404 "re-create an unknown VM"
r=$(curl -sS -f -X POST "$B/control/vms/vm_5/recreate") || fail "re-create vm_5 refused"
eq "$(echo "$r" | jq -c '[.name, .deleted, .incarnation]')" '["vm_5",false,1]' "the answer: vm_5 as /control/state shows it"
eq "$(vm_state vm_5 '[.deleted, .incarnation]')" '[false,1]' "vm_5 in /control/state"
new_id=$(curl -sS -H Metadata:true "$B/vm_5/metadata/instance/compute?api-version=2021-02-01" | jq -c .vmId)
[ "$new_id" != "$old_id" ] || fail "re-created vm_5 kept its vmId $old_id"
eq "$new_id" "$(vm_state vm_5 .vm_id)" "the new vmId in /control/state"
eq "$(imds vm_5 | jq .DocumentIncarnation)" 1 "DocumentIncarnation starts again from 1"
eq "$(timeline | jq -c '[.[] | select(.kind == "recreated") | [.vm, .fault_domain, .vm_id]]')" "[[\"vm_5\",2,$new_id]]" "recreated fact"
eq "$(code -X POST "$B/control/vms/vm_5/recreate")" 409 "re-create it twice"
create '{"EventType":"Reboot","Resources":["vm_5"],"NoticeSeconds":3600}' >/dev/null
eq "$(imds vm_5 | jq -c '[.DocumentIncarnation, [.Events[].Resources[]]]')" '[2,["vm_5"]]' "an event may name it again"
idp=$(create '{"EventType":"Preempt","Resources":["vm_1"],"DurationInSeconds":3600}')
eq "$(approve vm_0 "$idp")" 200 "approve a Preempt of vm_1 with an hour's impact"
r=$(curl -s -w ' %{http_code}' -X POST "$B/control/vms/vm_1/recreate")
[[ "$r" == *'still impacted'*' 409' ]] || fail "re-create a VM under its deleting impact: $r"
ok "a deleted VM re-created: answers again, a new vmId, DocumentIncarnation from 1"
sim_stop

# --- --approval-delay: approved, but starts only later (180 sim s = 3 s real)
sim_start --vms 2 --fault-domains 2 --time-scale 60 --approval-delay 180
id=$(create '{"EventType":"Freeze","Resources":["vm_0"],"DurationInSeconds":2}')
t0=$(now_ms)
eq "$(approve vm_1 "$id")" 200 "approve"
eq "$(ev_field "$id" EventStatus)" Scheduled "not yet started"
wait_for 10 sh -c "[ \"\$(curl -s '$B/control/state' | jq -r '.events[0].EventStatus')\" = Started ]" || fail "approval-delay never started it"
t1=$(now_ms)
[ $((t1 - t0)) -ge 2900 ] || fail "started after $((t1 - t0)) ms, expected >= 3000"
eq "$(ev_field "$id" started_how)" approved "how=approved"
sim_stop
ok "--approval-delay delays the start after approval"
echo "imds_sim_lifecycle: all passed"
