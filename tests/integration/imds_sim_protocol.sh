#!/usr/bin/env bash
# imds-sim speaks IMDS as IMDS.md says: header, api-version, fields by version, incarnation,
# approvals, throttling, instance/compute, and clear 400s on the control API.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"

sim_start --vms 6 --fault-domains 3 --own-events-only vm_5 --rate-limit 0
U="$B/vm_1/metadata/scheduledevents"

# --- requests IMDS refuses
eq "$(code "$U?api-version=$V")" 400 "no Metadata header"
curl -s "$U?api-version=$V" | jq -e '.error | test("metadata header")' >/dev/null || fail "400 body"
eq "$(code -H Metadata:false "$U?api-version=$V")" 400 "Metadata: false"
eq "$(code -H Metadata:true -H X-Forwarded-For:10.0.0.1 "$U?api-version=$V")" 400 "X-Forwarded-For"
eq "$(code -H Metadata:true "$U")" 400 "missing api-version"
eq "$(code -H Metadata:true "$U?api-version=2099-01-01")" 400 "unknown api-version"
eq "$(code -H Metadata:true "$U?api-version=latest")" 400 "latest"
curl -s -H Metadata:true "$U?api-version=latest" | jq -e '."newest-versions"[0] == "2020-07-01"' >/dev/null || fail "newest-versions"
eq "$(code -H Metadata:true "$B/vm_99/metadata/scheduledevents?api-version=$V")" 404 "unknown VM"
eq "$(code -H Metadata:true -X PUT "$U?api-version=$V")" 405 "PUT"
ok "missing/false header, X-Forwarded-For, missing/unknown/latest api-version -> 400; 404; 405"

# --- the empty document; incarnation steady without change
d1=$(imds vm_1); sleep 0.3; d2=$(imds vm_1)
eq "$d1" "$d2" "two GETs with no change"
eq "$(echo "$d1" | jq -c .)" '{"DocumentIncarnation":1,"Events":[]}' "empty document"
ok "incarnation unchanged between two GETs with no change"

# --- an event, seen by every VM of the set, fields by api-version
id=$(create '{"EventType":"Reboot","Resources":["vm_0","vm_3"],"NoticeSeconds":600,"DurationInSeconds":30}')
[[ "$id" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]] || fail "EventId $id"
doc=$(imds vm_1)
eq "$(echo "$doc" | jq .DocumentIncarnation)" 2 "incarnation after create"
e=$(echo "$doc" | jq -c '.Events[0]')
eq "$(echo "$e" | jq -r '[.EventId,.EventStatus,.EventType,.ResourceType,(.Resources|join(",")),.EventSource,.DurationInSeconds]|join(" ")')" \
   "$id Scheduled Reboot VirtualMachine vm_0,vm_3 Platform 30" "2020-07-01 event"
nb=$(echo "$e" | jq -r .NotBefore)
[[ "$nb" =~ ^(Mon|Tue|Wed|Thu|Fri|Sat|Sun),\ [0-9]{2}\ [A-Z][a-z]{2}\ [0-9]{4}\ [0-9]{2}:[0-9]{2}:[0-9]{2}\ GMT$ ]] || fail "NotBefore RFC 1123: $nb"
nbs=$(date -d "$nb" +%s); now=$(date +%s)
[ $((nbs - now)) -ge 595 ] && [ $((nbs - now)) -le 602 ] || fail "NotBefore $nb is not now + 600 s"
echo "$e" | jq -e '.Description | length > 0' >/dev/null || fail "Description"
eq "$(imds vm_0 | jq -c .Events[0].Resources)" '["vm_0","vm_3"]' "affected VM sees it too"
eq "$(imds vm_5 | jq -c .)" '{"DocumentIncarnation":1,"Events":[]}' "own-events-only VM does not see others' events"
for v in 2017-11-01 2019-01-01; do
    eq "$(imds vm_1 $v | jq -c '.Events[0] | [has("Description"),has("EventSource"),has("DurationInSeconds")]')" '[false,false,false]' "$v fields"
done
eq "$(imds vm_1 2019-04-01 | jq -c '.Events[0] | [has("Description"),has("EventSource"),has("DurationInSeconds")]')" '[true,false,false]' "2019-04-01 fields"
eq "$(imds vm_1 2019-08-01 | jq -c '.Events[0] | [has("Description"),has("EventSource"),has("DurationInSeconds")]')" '[true,true,false]' "2019-08-01 fields"
eq "$(imds vm_1 2017-08-01 | jq -c '.Events[0].Resources')" '["vm_0","vm_3"]' "2017-08-01 names"
old=$(imds vm_1 2017-03-01)
eq "$(echo "$old" | jq -c '.Events[0].Resources')" '["_vm_0","_vm_3"]' "2017-03-01 names with _"
echo "$old" | jq -e '.Events[0].NotBefore | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")' >/dev/null || fail "2017-03-01 NotBefore"
ok "fields by api-version (2017-03-01 _names, no Description/EventSource/Duration below their versions)"

# Preempt is unknown before 2017-11-01, Terminate before 2019-01-01
create '{"EventType":"Preempt","Resources":["vm_2"]}' >/dev/null
create '{"EventType":"Terminate","Resources":["vm_2"],"NoticeSeconds":600}' >/dev/null
eq "$(imds vm_1 2017-08-01 | jq -c '[.Events[].EventType]')" '["Reboot"]' "2017-08-01 types"
eq "$(imds vm_1 2017-11-01 | jq -c '[.Events[].EventType]')" '["Reboot","Preempt"]' "2017-11-01 types"
eq "$(imds vm_1 2019-01-01 | jq -c '[.Events[].EventType]')" '["Reboot","Preempt","Terminate"]' "2019-01-01 types"
eq "$(imds vm_1 | jq -c '[.Events[] | .NotBefore != ""]')" '[true,true,true]' "all Scheduled"
ok "Preempt/Terminate hidden below their api-versions"

# --- approvals
inc=$(imds vm_1 | jq .DocumentIncarnation)
eq "$(code -H Metadata:true -d '{"StartRequests":[{"EventId":"00000000-0000-0000-0000-000000000000"}]}' "$U?api-version=$V")" 400 "unknown EventId"
eq "$(code -H Metadata:true -d 'not json' "$U?api-version=$V")" 400 "body not JSON"
eq "$(code -H Metadata:true -d '{"Start":[]}' "$U?api-version=$V")" 400 "no StartRequests"
eq "$(code -H Metadata:true -d '{"StartRequests":[{"Id":"x"}]}' "$U?api-version=$V")" 400 "no EventId"
eq "$(code -d "{\"StartRequests\":[{\"EventId\":\"$id\"}]}" "$U?api-version=$V")" 400 "POST without header"
eq "$(ev_field "$id" EventStatus)" Scheduled "nothing approved by bad POSTs"
eq "$(imds vm_1 | jq .DocumentIncarnation)" "$inc" "bad POSTs change nothing"
ok "POST: unknown EventId, bad body, missing header -> 400, nothing changes"

ID_UP=$(echo "$id" | tr a-f A-F)
eq "$(code -H Metadata:true -d "{\"DocumentIncarnation\":\"$inc\",\"StartRequests\":[{\"EventId\":\"$ID_UP\"}]}" "$U?api-version=2017-03-01")" 200 "2017 body with DocumentIncarnation, upper-case id"
eq "$(approve vm_2 "$id")" 200 "second POST (another VM)"
eq "$(approve vm_1 "$id")" 200 "second POST (same VM)"
eq "$(ev_field "$id" EventStatus)" Started "approved -> Started"
eq "$(ev_field "$id" started_how)" approved "how"
eq "$(state | jq -r --arg id "$id" '[.events[] | select(.EventId == $id) | .approvals[].vm] | join(",")')" vm_1,vm_2 "approvals"
eq "$(timeline | jq --arg id "$id" '[.[] | select(.kind == "approved" and .event == $id)] | length')" 1 "one approved fact"
eq "$(imds vm_1 | jq -r --arg id "$id" '.Events[] | select(.EventId == $id) | .EventStatus + "|" + .NotBefore')" "Started|" "NotBefore empty once Started"
ok "approval (any VM, case-insensitive id, 2017 body) starts the event; second POST 200"

# --- instance/compute
c=$(curl -sS -H Metadata:true "$B/vm_4/metadata/instance/compute?api-version=2021-02-01")
eq "$(echo "$c" | jq -r '[.name,.platformFaultDomain,.platformUpdateDomain]|join(" ")')" "vm_4 1 1" "compute"
eq "$(code "$B/vm_4/metadata/instance/compute?api-version=2021-02-01")" 400 "compute without header"
ok "instance/compute: name, fault and update domain"

# --- control API: bad input names what was wrong
for body in '{"EventType":"Nap","Resources":["vm_0"]}' '{"EventType":"Reboot"}' \
    '{"EventType":"Reboot","Resources":["vm_77"]}' '{"EventType":"Reboot","FaultDomain":9}' \
    '{"EventType":"Reboot","FaultDomain":1,"Colour":"red"}' '{"EventType":"Freeze","FaultDomain":1,"Status":"Started"}' \
    '{"EventType":"Reboot","FaultDomain":1,"DurationInSeconds":-5}' '[1]'; do
    r=$(curl -s -w '\n%{http_code}' -d "$body" "$B/control/events")
    eq "$(echo "$r" | tail -1)" 400 "control $body"
    jq -e '.error | length > 10' <<<"${r%$'\n'*}" >/dev/null || fail "control error text for $body: $r"
done
curl -s -d '{"EventType":"Reboot","Resources":["vm_77"]}' "$B/control/events" | grep vm_77 >/dev/null || fail "error names the VM"
for ep in events maintenance faults; do # an unknown field is named, on every control POST
    r=$(curl -s -w '\n%{http_code}' -d '{"Colour":"red"}' "$B/control/$ep")
    eq "$(echo "$r" | tail -1)" 400 "unknown field on /control/$ep"
    echo "$r" | head -1 | jq -e '.error | test("unknown field \"Colour\"")' >/dev/null ||
        fail "/control/$ep does not name the unknown field: $(echo "$r" | head -1)"
done
eq "$(code -X DELETE "$B/control/events/$id")" 409 "cancel a Started event"
eq "$(code -X DELETE "$B/control/events/nope")" 404 "cancel unknown"
ok "control API rejects bad input with reasons"
sim_stop

# --- --unknown-event-ok, and the default rate limit
sim_start --vms 6 --fault-domains 2 --unknown-event-ok
# --- 429 past 5 requests per second from one VM: the 8 requests come from one curl process
#     (one connection, one after the other), so they fall within the second however slowly
#     processes start on a loaded machine
args=()
for _ in 1 2 3 4 5 6 7 8; do args+=(-o /dev/null "$B/vm_4/metadata/scheduledevents?api-version=$V"); done
codes=$(curl -s -H Metadata:true -w '%{http_code}\n' "${args[@]}" | tr '\n' ' ' || true)
eq "$codes" "200 200 200 200 200 429 429 429 " "rate limit"
eq "$(code -H Metadata:true "$B/vm_3/metadata/instance/compute?api-version=2021-02-01")" 200 "other VMs not throttled"
sleep 1.1
eq "$(code -H Metadata:true "$B/vm_4/metadata/scheduledevents?api-version=$V")" 200 "after a second"
ok "429 past 5 requests per second per VM"

eq "$(approve vm_0 11111111-2222-3333-4444-555555555555)" 200 "--unknown-event-ok"
sim_stop
ok "--unknown-event-ok answers 200"
echo "imds_sim_protocol: all passed"
