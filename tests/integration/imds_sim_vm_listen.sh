#!/usr/bin/env bash
# imds-sim serves unmodified clients (issue 22): --vm-listen NAME=HOST:PORT serves VM NAME's
# IMDS on an address of its own at the real paths, no VM in the URL — scheduled events (GET
# and the approval POST, the same checks as /<vm>/...), instance/compute, and the whole
# instance document (compute and network) — and nothing else there (no control API, no other
# VM). A query naming a parameter twice is refused (400) on every path, as IMDS does. Bad
# --vm-listen values exit 2 with a message. (Azure's sample at 169.254.169.254 in a network
# namespace: imds_sim_azure_sample_netns.sh.)
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"
CV=2021-02-01

# --- bad --vm-listen values: exit 2, the option named
for bad in vm_1 vm_1=127.0.0.1 =127.0.0.1:80 vm_1=localhost:80 vm_1=127.0.0.1:70000 \
    vm_9=127.0.0.1:0; do
    rc=0
    "$SC_BIN/imds-sim" --listen 127.0.0.1:0 --vms 4 --fault-domains 2 --vm-listen "$bad" \
        >"$TMP/bad.out" 2>"$TMP/bad.err" || rc=$?
    eq "$rc" 2 "exit status for --vm-listen $bad"
    grep -q -- '--vm-listen' "$TMP/bad.err" || fail "no message naming --vm-listen for $bad: $(cat "$TMP/bad.err")"
    [ ! -s "$TMP/bad.out" ] || fail "--vm-listen $bad: started anyway ($(cat "$TMP/bad.out"))"
done
grep -q 'no VM named "vm_9"' "$TMP/bad.err" || fail "unknown VM not named: $(cat "$TMP/bad.err")"
ok "bad --vm-listen values (no =, no port, no name, a host name, port 70000, an unknown VM) exit 2 naming the option"

# vm_1 and vm_3 on this test's own loopback address, ports picked by the system
sim_start --vms 4 --fault-domains 2 --rate-limit 0 --vm-listen "vm_1=$SC_LO:0" --vm-listen "vm_3=$SC_LO:0"
vl() { sed -n "s/^vm-listen $1 $SC_LO:\([0-9]*\)\$/\1/p" "$TMP/sim.out"; }
A1="http://$SC_LO:$(vl vm_1)"
A3="http://$SC_LO:$(vl vm_3)"
[ "$A1" != "http://$SC_LO:" ] && [ "$A3" != "http://$SC_LO:" ] || fail "no vm-listen lines: $(cat "$TMP/sim.out")"
[ "$(tail -1 "$TMP/sim.out" | cut -d' ' -f1-2)" = "listening on" ] || fail "\"listening on\" is not the last line: $(cat "$TMP/sim.out")"
S1="$A1/metadata/scheduledevents"

# --- the checks of the per-VM paths, at the real paths
eq "$(code "$S1?api-version=$V")" 400 "no Metadata header"
curl -s "$S1?api-version=$V" | jq -e '.error | test("metadata header")' >/dev/null || fail "400 body"
eq "$(code -H Metadata:true -H X-Forwarded-For:10.0.0.1 "$S1?api-version=$V")" 400 "X-Forwarded-For"
eq "$(code -H Metadata:true "$S1")" 400 "no api-version"
eq "$(code -H Metadata:true "$S1?api-version=latest")" 400 "latest"
eq "$(code -H Metadata:true -X PUT "$S1?api-version=$V")" 405 "PUT"
eq "$(code -H Metadata:true "$A1/vm_1/metadata/scheduledevents?api-version=$V")" 404 "a VM prefix on a VM's own address"
eq "$(code -H Metadata:true "$A1/metadata/other?api-version=$CV")" 404 "unknown path"
eq "$(code -H Metadata:true "$A1/control/state?api-version=$V")" 404 "no control API on a VM's address"
eq "$(code -H Metadata:true -X POST -d '{"EventType":"Reboot","Resources":["vm_1"]}' "$A1/control/events")" 404 "no control POST on a VM's address"
eq "$(state | jq '[.events[]] | length')" 0 "nothing created through a VM's address"
ok "a VM's address: Metadata header, X-Forwarded-For, api-version, method as /<vm>/...; no VM prefix, no control API"

# --- the same documents as /<vm>/..., each VM its own
id=$(create '{"EventType":"Reboot","Resources":["vm_3"],"NoticeSeconds":600,"DurationInSeconds":30}')
for v in 2017-03-01 2019-01-01 $V; do
    eq "$(curl -sS -H Metadata:true "$S1?api-version=$v")" "$(imds vm_1 $v)" "vm_1's document at $v"
done
eq "$(curl -sS -H Metadata:true "$S1?api-version=$V" | jq -r '[.DocumentIncarnation, .Events[0].EventId, (.Events[0].Resources | join(","))] | join(" ")')" \
    "2 $id vm_3" "the event (on vm_3) in vm_1's document"
for p in instance/compute instance/network instance; do
    eq "$(curl -sS -H Metadata:true "$A1/metadata/$p?api-version=$CV")" \
        "$(curl -sS -H Metadata:true "$B/vm_1/metadata/$p?api-version=$CV")" "vm_1's $p"
done
eq "$(curl -sS -H Metadata:true "$A3/metadata/instance/compute?api-version=$CV" | jq -r .name)" vm_3 "vm_3's address is vm_3's"
ok "a VM's address serves its scheduled events (every api-version), instance/compute, instance/network, instance as /<vm>/ does"

# --- the whole instance document: compute and network, Azure's shape
doc=$(curl -sS -H Metadata:true "$A3/metadata/instance?api-version=$CV")
eq "$(echo "$doc" | jq -c 'keys')" '["compute","network"]' "instance keys"
eq "$(echo "$doc" | jq -c .compute)" "$(curl -sS -H Metadata:true "$A3/metadata/instance/compute?api-version=$CV" | jq -c .)" "instance.compute is instance/compute"
eq "$(echo "$doc" | jq -r '.compute | [.name, .platformFaultDomain, .platformUpdateDomain, (.vmId | test("^[0-9a-f-]{36}$")), (.tagsList | length)] | join(" ")')" \
    "vm_3 1 1 true 0" "instance.compute fields"
eq "$(echo "$doc" | jq -r '.network.interface[0] | [.ipv4.ipAddress[0].privateIpAddress, .ipv4.ipAddress[0].publicIpAddress, .ipv4.subnet[0].address, .ipv4.subnet[0].prefix, (.ipv6.ipAddress | length), .macAddress] | join(" ")')" \
    "10.0.0.7  10.0.0.0 16 0 000D3A000007" "instance.network (vm_3: host 3 + 4)"
eq "$(curl -sS -H Metadata:true "$A1/metadata/instance?api-version=$CV" | jq -r '.network.interface[0].ipv4.ipAddress[0].privateIpAddress')" 10.0.0.5 "vm_1's address"
eq "$(code -H Metadata:true "$A1/metadata/instance?api-version=2099-01-01")" 400 "instance: unknown api-version"
eq "$(code "$A1/metadata/instance?api-version=$CV")" 400 "instance: no Metadata header"
eq "$(code -H Metadata:true -X POST "$A1/metadata/instance?api-version=$CV")" 405 "instance: POST"
eq "$(timeline | jq -r '[.[] | select(.kind == "get" and .vm == "vm_3" and .status == 200) | .path] | unique | join(",")')" \
    compute,instance "timeline: the path of each instance get"
ok "/metadata/instance: compute (as instance/compute) and network (private 10.0.0.<i+4>/16, MAC 000D3A...), checked as compute is"

# --- the approval POST at the real path, and the outage of an impact
eq "$(code -H Metadata:true -d "{\"StartRequests\":[{\"EventId\":\"$id\"}]}" "$S1?api-version=$V&api-version=$V")" 400 "POST with api-version twice"
eq "$(ev_field "$id" EventStatus)" Scheduled "a refused POST approves nothing"
eq "$(code -d "{\"StartRequests\":[{\"EventId\":\"$id\"}]}" "$S1?api-version=$V")" 400 "POST without header"
eq "$(code -H Metadata:true -d "{\"StartRequests\":[{\"EventId\":\"00000000-0000-0000-0000-000000000000\"}]}" "$S1?api-version=$V")" 400 "POST of an unknown EventId"
eq "$(ev_field "$id" EventStatus)" Scheduled "still Scheduled"
eq "$(code -H Metadata:true -d "{\"StartRequests\":[{\"EventId\":\"$id\"}]}" "$S1?api-version=$V")" 200 "POST approval"
eq "$(ev_field "$id" EventStatus)" Started "approved at the real path -> Started"
eq "$(ev_field "$id" '[.approvals[].vm] | join(",")')" vm_1 "approved by vm_1"
wait_for 5 sh -c "curl -sS '$B/control/state' | jq -e '[.vms[] | select(.name == \"vm_3\") | .impacted] == [true]' >/dev/null" ||
    fail "vm_3 not impacted: $(state | jq -c '.vms[]')"
eq "$(code -H Metadata:true "$A3/metadata/scheduledevents?api-version=$V")" 000 "vm_3's address during its Reboot impact: no answer"
eq "$(code -H Metadata:true "$B/vm_0/metadata/scheduledevents?api-version=$V")" 200 "vm_0, not in the event, answers"
ok "POST at the real path: header, unknown EventId, duplicated api-version -> 400; the approval starts the event; a VM under impact does not answer on its address"

# --- a query parameter given twice: 400 on every path, both listeners (one curl for many
#     URLs: fewer processes on a busy machine)
once=() twice=()
for base in "$B/vm_0" "$B/vm_2" "$A1"; do
    for p in "scheduledevents?api-version=$V" "instance/compute?api-version=$CV" "instance/network?api-version=$CV" "instance?api-version=$CV"; do
        once+=(-o /dev/null "$base/metadata/$p" -o /dev/null "$base/metadata/$p&format=json")
        twice+=(-o /dev/null "$base/metadata/$p&${p#*\?}" -o /dev/null "$base/metadata/$p&format=json&format=json")
    done
done
codes() { curl -s -H Metadata:true -w '%{http_code} ' "$@" | tr ' ' '\n' | sort | uniq -c | xargs || true; }
eq "$(codes "${once[@]}")" "24 200" "every path, each parameter once (api-version, format)"
eq "$(codes "${twice[@]}")" "24 400" "every path, a parameter twice (api-version, format)"
r=$(curl -s -H Metadata:true "$A1/metadata/instance?api-version=$CV&api-version=$CV")
jq -e '.error | test("api-version given twice")' <<<"$r" >/dev/null || fail "the 400 does not name the parameter: $r"
eq "$(code "$B/control/timeline?since=0&since=0")" 400 "control: since twice"
eq "$(code "$B/control/timeline?since=0")" 200 "control: since once"
eq "$(timeline | jq '[.[] | select(.why == "query")] | length > 0')" true "timeline: refused for the query"
ok "a query parameter given twice (api-version, format) -> 400 on every IMDS path of both listeners and on the control API"
sim_stop
echo "imds_sim_vm_listen: all passed"
