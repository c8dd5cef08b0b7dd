#!/usr/bin/env bash
# imds-sim: the set grows and shrinks (issue 21). The compute metadata's vmId,
# placementGroupId, priority and zone; POST /control/vms adds a VM (its own documents, in
# events, rollouts and approvals; events per placement group); DELETE /control/vms/NAME
# schedules a Terminate with --terminate-notice (or notice_seconds), approved early by a POST
# or started at NotBefore, which deletes the VM through the usual path (--on-impact start); a
# deleted name added again; POST /control/vms/NAME/reimage runs --on-impact start, reimage,
# end with a new vmId; bad input answered 400/404/405/409 naming the field.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"

CV=2021-02-01
compute() { curl -sS -H Metadata:true "$B/$1/metadata/instance/compute?api-version=$CV"; }
vm_state() { state | jq -c --arg vm "$1" ".vms[] | select(.name == \$vm) | $2"; }
# refused EXPECTED-STATUS MESSAGE-PART CURL-ARGS...: the answer has that status and message
refused() {
    local want=$1 msg=$2 r
    shift 2
    r=$(curl -s -w ' %{http_code}' "$@")
    [[ "$r" == *"$msg"*" $want" ]] || fail "curl $*: expected $want with \"$msg\", got: $r"
}
# hook lines of the --on-impact command, as "phase vm type id"
HOOKLOG=$TMP/hook.log
cat >"$TMP/hook.sh" <<EOF
#!/bin/sh
echo "\$*" >>"$HOOKLOG"
EOF
chmod +x "$TMP/hook.sh"
: >"$HOOKLOG"
hooked() { grep -qx "$1" "$HOOKLOG"; }

# --- a bad --terminate-notice exits 2 naming the option
rc=0; "$SC_BIN/imds-sim" --listen 127.0.0.1:0 --vms 1 --fault-domains 1 --terminate-notice -1 2>"$TMP/bad.err" || rc=$?
eq "$rc" 2 "--terminate-notice -1 exit status"
grep -q -- '--terminate-notice' "$TMP/bad.err" || fail "--terminate-notice not named: $(cat "$TMP/bad.err")"

# X=60: a 600 s notice is 10 s real; impacts of unknown length (--unknown-impact 60 s) 1 s.
# Nothing completes during the test (--complete-after 100 s real), so no document changes
# but those the test makes.
sim_start --vms 3 --fault-domains 3 --time-scale 60 --rate-limit 0 --terminate-notice 600 \
    --complete-after 6000 --on-impact "$TMP/hook.sh"

# --- the VMs given at startup: one placement group for the set, Regular, no zone, a vmId
pg=$(compute vm_0 | jq -r .placementGroupId)
[[ "$pg" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] || fail "placementGroupId not a GUID: $pg"
for vm in vm_0 vm_1 vm_2; do
    eq "$(compute $vm | jq -c '[.name, .placementGroupId, .priority, .zone]')" "[\"$vm\",\"$pg\",\"Regular\",\"\"]" "$vm's compute fields"
    eq "$(compute $vm | jq -c .vmId)" "$(vm_state $vm .vm_id)" "$vm's vmId as /control/state has it"
done
eq "$(curl -sS -H Metadata:true "$B/vm_1/metadata/instance?api-version=$CV" | jq -c '.compute | [.placementGroupId, .priority, .zone]')" "[\"$pg\",\"Regular\",\"\"]" "/metadata/instance's compute"
eq "$(vm_state vm_1 '[.placement_group, .priority, .zone]')" "[\"$pg\",\"Regular\",\"\"]" "/control/state's fields"
ok "compute: vmId, placementGroupId (one for the set), priority Regular, zone \"\""

# --- bad input: 400 naming the field, 409 for a live name, 404 for no such VM, 405
refused 400 'name is missing' -d '{"fault_domain":1}' "$B/control/vms"
refused 400 'name must be a string' -d '{"name":"a/b"}' "$B/control/vms"
refused 400 'name must be a string' -d '{"name":7}' "$B/control/vms"
refused 400 'name must be a string' -d '{"name":""}' "$B/control/vms"
refused 400 'taken by the control API' -d '{"name":"control"}' "$B/control/vms"
refused 400 'fault_domain must be an integer' -d '{"name":"x","fault_domain":"1"}' "$B/control/vms"
refused 400 'update_domain must be an integer' -d '{"name":"x","update_domain":-1}' "$B/control/vms"
refused 400 'priority must be' -d '{"name":"x","priority":"Low"}' "$B/control/vms"
refused 400 'placement_group must be' -d '{"name":"x","placement_group":""}' "$B/control/vms"
refused 400 'zone must be' -d '{"name":"x","zone":"a b"}' "$B/control/vms"
refused 400 'unknown field \"fd\"' -d '{"name":"x","fd":1}' "$B/control/vms"
refused 400 'body is not JSON' -d '{"name":' "$B/control/vms"
refused 409 'name \"vm_1\" is a VM of the set' -d '{"name":"vm_1"}' "$B/control/vms"
refused 404 'no VM named vm_9' -X DELETE "$B/control/vms/vm_9"
refused 404 'no VM named vm_9' -X POST "$B/control/vms/vm_9/reimage"
refused 404 'no such control path' -X POST "$B/control/vms/vm_1/explode"
refused 405 'not allowed' "$B/control/vms/vm_1"
refused 405 'not allowed' "$B/control/vms"
refused 400 'notice_seconds must be a number' -X DELETE -d '{"notice_seconds":-5}' "$B/control/vms/vm_1"
refused 400 'unknown field \"names\"' -X DELETE -d '{"names":["vm_1"]}' "$B/control/vms/vm_1"
refused 400 'names must be a non-empty array' -X DELETE -d '{}' "$B/control/vms"
refused 400 'names: no VM named \"vm_9\"' -X DELETE -d '{"names":["vm_1","vm_9"]}' "$B/control/vms"
refused 400 'names: named twice: \"vm_1\"' -X DELETE -d '{"names":["vm_1","vm_1"]}' "$B/control/vms"
refused 400 'unknown field \"x\"' -X POST -d '{"x":1}' "$B/control/vms/vm_1/reimage"
eq "$(state | jq -c '[(.vms | length), (.events | length)]')" '[3,0]' "nothing added, nothing scheduled by the refusals"
ok "bad input refused: 400 naming the field, 409 for a live name, 404, 405; nothing changed"

# --- scale-out: vmss_3 (fault domain 4: the set's domains grow, Spot, zone 2) and other_0 in
#     another placement group
a=$(curl -sS -f -d '{"name":"vmss_3","fault_domain":4,"update_domain":1,"priority":"Spot","placement_group":"'"$pg"'","zone":"2"}' "$B/control/vms") ||
    fail "POST /control/vms refused"
eq "$(echo "$a" | jq -c '[.name, .fault_domain, .update_domain, .priority, .zone, .deleted, .incarnation]')" '["vmss_3",4,1,"Spot","2",false,1]' "the answer: the VM as /control/state shows it"
eq "$(vm_state vmss_3 .vm_id)" "$(echo "$a" | jq -c .vm_id)" "vmss_3 in /control/state"
eq "$(compute vmss_3 | jq -c '[.name, .platformFaultDomain, .platformUpdateDomain, .priority, .zone, .placementGroupId]')" \
    "[\"vmss_3\",\"4\",\"1\",\"Spot\",\"2\",\"$pg\"]" "vmss_3's compute document"
eq "$(compute vmss_3 | jq -c .vmId)" "$(echo "$a" | jq -c .vm_id)" "vmss_3's vmId"
eq "$(curl -sS -H Metadata:true "$B/vmss_3/metadata/instance/network?api-version=$CV" | jq -r '.interface[0].ipv4.ipAddress[0].privateIpAddress')" 10.0.0.7 "vmss_3's address (host 3 + 4)"
eq "$(imds vmss_3 | jq -c .)" '{"DocumentIncarnation":1,"Events":[]}' "vmss_3's scheduled events"
eq "$(timeline | jq -c '[.[] | select(.kind == "added") | [.vm, .fault_domain, .priority, .zone]]')" '[["vmss_3",4,"Spot","2"]]' "added fact"
curl -sS -f -d '{"name":"other_0","placement_group":"pg-other"}' "$B/control/vms" >/dev/null || fail "add other_0"
eq "$(compute other_0 | jq -c '[.placementGroupId, .priority, .zone, .platformFaultDomain]')" '["pg-other","Regular","","1"]' "other_0's defaults (fault domain 4 mod 3)"
ok "scale-out: an added VM has its own documents (compute, network, scheduled events) and state"

# events name it; a FaultDomain event and a rollout take it; it approves; events are per
# placement group
e1=$(create '{"EventType":"Reboot","Resources":["vm_0","vmss_3"],"NoticeSeconds":3600}')
eq "$(imds vmss_3 | jq -c '[.DocumentIncarnation, [.Events[].Resources[]]]')" '[2,["vm_0","vmss_3"]]' "vmss_3 sees the event naming it"
eq "$(imds vm_1 | jq -c '[.Events[].EventId]')" "[\"$e1\"]" "vm_1 sees it"
eq "$(imds other_0 | jq -c .)" '{"DocumentIncarnation":1,"Events":[]}' "other_0 (another placement group) does not"
e2=$(create '{"EventType":"Freeze","Resources":["other_0"],"NoticeSeconds":3600}')
eq "$(imds vm_1 | jq -c '[.Events[].EventId]')" "[\"$e1\"]" "vm_1 does not see other_0's event"
eq "$(approve vm_1 "$e2")" 400 "vm_1 cannot approve an event of another placement group"
eq "$(approve vmss_3 "$e1")" 200 "vmss_3 approves"
eq "$(ev_field "$e1" '[.EventStatus, ([.approvals[].vm] | join(",")), ([.impacts[].vm] | join(","))]' | jq -c .)" '["Started","vmss_3","vm_0,vmss_3"]' "started by vmss_3's approval"
e3=$(create '{"EventType":"Freeze","FaultDomain":4,"NoticeSeconds":3600}')
eq "$(ev_field "$e3" '.Resources | join(",")')" vmss_3 "FaultDomain 4 is vmss_3's"
eq "$(code -X DELETE "$B/control/events/$e3")" 200 "cancel it"
r=$(curl -sS -f -d '{"EventType":"Freeze","NoticeSeconds":3600,"FaultDomains":[4,1]}' "$B/control/maintenance") || fail "a rollout of fault domains 4 and 1"
e4=$(echo "$r" | jq -r '.EventIds[0]')
eq "$(ev_field "$e4" '.Resources | join(",")')" vmss_3 "the rollout's first step: fault domain 4"
eq "$(code -X DELETE "$B/control/events/$e4")" 200 "cancel it: the next step follows"
wait_for 10 sh -c "[ \"\$(curl -s '$B/control/state' | jq -r '.rollouts[0].EventIds | length')\" = 2 ]" || fail "no second step"
e5=$(state | jq -r '.rollouts[0].EventIds[1]')
eq "$(ev_field "$e5" '.Resources | join(",")')" vm_1,other_0 "fault domain 1: vm_1 and the added other_0"
eq "$(code -X DELETE "$B/control/events/$e5")" 200 "cancel it"
eq "$(code -X DELETE "$B/control/events/$e2")" 200 "cancel other_0's event"
ok "an added VM is named in events, taken by a FaultDomain event and a rollout, approves; events stay in their placement group"

# --- scale-in: a Terminate with --terminate-notice (600 s), approved early by a POST: the VM is
#     deleted through the usual path (impact_start deleted, --on-impact start)
t=$(curl -sS -f -X DELETE "$B/control/vms/vm_2") || fail "DELETE /control/vms/vm_2 refused"
id=$(echo "$t" | jq -r .EventId)
eq "$(echo "$t" | jq -c '[.EventType, .Resources, .EventStatus, .EventSource, .scale_in]')" '["Terminate",["vm_2"],"Scheduled","Platform",true]' "the answer: the Terminate"
created=$(timeline | jq -r --arg id "$id" '[.[] | select(.kind == "created" and .event == $id) | .wall * 1000 | round][0]')
nb=$(date -d "$(echo "$t" | jq -r .NotBefore)" +%s)
((nb * 1000 - created >= 10000 && nb * 1000 - created < 11000)) || fail "NotBefore is creation + 600/60 s rounded up: $((nb * 1000 - created)) ms"
eq "$(imds vm_1 | jq -c --arg id "$id" '[.Events[] | select(.EventId == $id) | [.EventType, .Resources]]')" '[["Terminate",["vm_2"]]]' "the others see it"
eq "$(timeline | jq -c '[.[] | select(.kind == "scale_in") | [.vm, .event]]')" "[[\"vm_2\",\"$id\"]]" "scale_in fact"
refused 409 "vm_2 is already being scaled in (Terminate $id)" -X DELETE "$B/control/vms/vm_2"
eq "$(approve vm_1 "$id")" 200 "approve it early"
eq "$(ev_field "$id" '[.EventStatus, .started_how]' | jq -c .)" '["Started","approved"]' "started by the approval"
eq "$(timeline | jq -c --arg id "$id" '[.[] | select(.kind == "impact_start" and .event == $id) | [.vm, .deleted]]')" '[["vm_2",true]]' "impact_start deletes vm_2"
wait_for 10 hooked "start vm_2 Terminate $id" || fail "--on-impact start not run for vm_2: $(cat "$HOOKLOG")"
eq "$(vm_state vm_2 .deleted)" true "vm_2 deleted in /control/state"
rc=0; curl -s -m 2 -H Metadata:true "$B/vm_2/metadata/scheduledevents?api-version=$V" >/dev/null || rc=$?
[ "$rc" -eq 52 ] || [ "$rc" -eq 56 ] || fail "vm_2 answered after its deletion (curl rc $rc)"
refused 400 'was deleted' -d '{"EventType":"Reboot","Resources":["vm_2"]}' "$B/control/events"
refused 409 'vm_2 is already deleted' -X DELETE "$B/control/vms/vm_2"
refused 409 'vm_2 is deleted' -X POST "$B/control/vms/vm_2/reimage"
ok "scale-in: Terminate with the set's notice, approved early, deletes the VM (--on-impact start)"

# notice_seconds, and at NotBefore without an approval
t=$(curl -sS -f -X DELETE -d '{"notice_seconds":120}' "$B/control/vms/other_0") || fail "DELETE other_0"
id2=$(echo "$t" | jq -r .EventId)
wait_for 10 sh -c "[ \"\$(curl -s '$B/control/state' | jq -r '.vms[] | select(.name == \"other_0\") | .deleted')\" = true ]" || fail "other_0 never deleted"
eq "$(ev_field "$id2" started_how)" not_before "started at NotBefore (120 s = 2 s real)"
wait_for 10 hooked "start other_0 Terminate $id2" || fail "--on-impact start not run for other_0"
# a scale-in of several VMs: one Terminate each, the same NotBefore
r=$(curl -sS -f -X DELETE -d '{"names":["vm_1","vmss_3"]}' "$B/control/vms") || fail "DELETE /control/vms"
eq "$(echo "$r" | jq -c '[.[] | [.EventType, .Resources[0]]]')" '[["Terminate","vm_1"],["Terminate","vmss_3"]]' "one Terminate per VM"
eq "$(echo "$r" | jq '[.[].NotBefore] | unique | length')" 1 "the same NotBefore"
for e in $(echo "$r" | jq -r '.[].EventId'); do eq "$(code -X DELETE "$B/control/events/$e")" 200 "cancel $e"; done
ok "scale-in: notice_seconds, NotBefore starts it unapproved; several VMs at once share NotBefore"

# --- a deleted name added again: a new VM in its slot (new vmId, domains as given)
wait_for 10 sh -c "curl -s '$B/control/timeline' | jq -e --arg id '$id' '[.[] | select(.kind == \"impact_end\" and .event == \$id)] | length == 1' >/dev/null" ||
    fail "vm_2's Terminate impact never ended"
old=$(vm_state vm_2 .vm_id)
a=$(curl -sS -f -d '{"name":"vm_2","fault_domain":0,"zone":"1"}' "$B/control/vms") || fail "add vm_2 again"
eq "$(echo "$a" | jq -c '[.deleted, .fault_domain, .zone, .incarnation]')" '[false,0,"1",1]' "vm_2 added again"
[ "$(echo "$a" | jq -c .vm_id)" != "$old" ] || fail "vm_2 added again kept its vmId"
eq "$(state | jq '[.vms[] | select(.name == "vm_2")] | length')" 1 "one vm_2 in /control/state"
eq "$(compute vm_2 | jq -c '[.vmId, .platformFaultDomain, .zone]')" "[$(echo "$a" | jq -c .vm_id),\"0\",\"1\"]" "its compute document"
ok "a deleted name added again: a new VM (new vmId, its own domains)"

# --- reimage: --on-impact start, reimage, end (in order, type Reimage, the new vmId); a new vmId
#     and a new IMDS service (DocumentIncarnation from 1)
old=$(vm_state vm_0 .vm_id)
imds vm_0 >/dev/null
[ "$(imds vm_0 | jq .DocumentIncarnation)" -gt 1 ] || fail "vm_0's DocumentIncarnation never moved"
a=$(curl -sS -f -X POST "$B/control/vms/vm_0/reimage") || fail "reimage vm_0 refused"
new=$(echo "$a" | jq -r .vm_id)
[ "\"$new\"" != "$old" ] || fail "reimaged vm_0 kept its vmId"
eq "$(echo "$a" | jq -c '[.name, .deleted, .incarnation]')" '["vm_0",false,1]' "the answer: vm_0"
eq "$(compute vm_0 | jq -r .vmId)" "$new" "the new vmId in compute"
eq "$(imds vm_0 | jq .DocumentIncarnation)" 1 "DocumentIncarnation from 1"
wait_for 10 hooked "end vm_0 Reimage $new" || fail "--on-impact end not run: $(cat "$HOOKLOG")"
eq "$(grep ' vm_0 Reimage ' "$HOOKLOG" | tr '\n' '|')" "start vm_0 Reimage $new|reimage vm_0 Reimage $new|end vm_0 Reimage $new|" "--on-impact start, reimage, end in order"
eq "$(timeline | jq -c '[.[] | select(.kind == "reimaged") | [.vm, .vm_id, .old_vm_id]]')" "[[\"vm_0\",\"$new\",$old]]" "reimaged fact"
ok "reimage: --on-impact start, reimage, end; a new vmId, DocumentIncarnation from 1"
sim_stop
echo "imds_sim_scale: all passed"
