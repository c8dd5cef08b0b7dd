#!/usr/bin/env bash
# imds-sim fault injection (POST /control/faults: 500, 429, 410, timeout, garbage, empty,
# reset; count) and the service's own quirks (--first-call-delay, --idle-disable).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
fault() { curl -sS -f -d "$1" "$B/control/faults" >/dev/null || fail "fault $1 refused"; }
U() { echo "$B/$1/metadata/scheduledevents?api-version=$V"; }

sim_start --vms 4 --fault-domains 2 --rate-limit 0 --fault-timeout 3

fault '{"vm":"vm_1","answer":500,"count":2}'
eq "$(code -H Metadata:true "$(U vm_1)") $(code -H Metadata:true "$(U vm_1)") $(code -H Metadata:true "$(U vm_1)")" "500 500 200" "500 x2"
eq "$(code -H Metadata:true "$(U vm_0)")" 200 "other VM unaffected"
fault '{"vm":"vm_1","answer":429}'
eq "$(code -H Metadata:true "$(U vm_1)") $(code -H Metadata:true "$(U vm_1)")" "429 200" "429 (count defaults to 1)"
fault '{"vm":"vm_1","answer":410,"count":1}'
eq "$(code -H Metadata:true "$(U vm_1)")" 410 "410"
ok "500, 429, 410 for exactly count requests"

fault '{"vm":"vm_2","answer":"garbage"}'
body=$(curl -s -H Metadata:true "$(U vm_2)")
[ -n "$body" ] || fail "garbage is empty"
if printf '%s' "$body" | jq . >/dev/null 2>&1; then fail "garbage parsed as JSON"; fi
fault '{"vm":"vm_2","answer":"empty"}'
eq "$(curl -s -o "$TMP/empty" -w '%{http_code} %{size_download}' -H Metadata:true "$(U vm_2)")" "200 0" "empty 200"
fault '{"vm":"vm_2","answer":"reset"}'
rc=0; curl -s -H Metadata:true "$(U vm_2)" >/dev/null || rc=$?
[ "$rc" -eq 52 ] || [ "$rc" -eq 56 ] || fail "reset: curl rc $rc"
eq "$(code -H Metadata:true "$(U vm_2)")" 200 "after reset"
ok "garbage (not JSON), empty 200 body, reset (closed unanswered)"

fault '{"vm":"vm_3","answer":"timeout"}'
rc=0; t0=$(now_ms); curl -s -m 1 -H Metadata:true "$(U vm_3)" >/dev/null || rc=$?
eq "$rc" 28 "timeout: the client times out"
eq "$(code -m 2 -H Metadata:true "$(U vm_3)")" 200 "after timeout"
ok "timeout: no answer until the client gives up"

fault '{"vm":"*","answer":503,"count":1}'
eq "$(code -H Metadata:true "$(U vm_0)") $(code -H Metadata:true "$(U vm_3)")" "503 503" "* = every VM"
eq "$(code -d '{"vm":"vm_9","answer":500}' "$B/control/faults")" 400 "unknown VM"
eq "$(code -d '{"vm":"vm_1","answer":"explode"}' "$B/control/faults")" 400 "unknown answer"
eq "$(code -d '{"vm":"vm_1","answer":200}' "$B/control/faults")" 400 "200 is not a fault"
eq "$(code -d '{"vm":"vm_1","answer":500,"count":-1}' "$B/control/faults")" 400 "negative count"
eq "$(timeline | jq '[.[] | select(.fault != null)] | length')" 10 "faults in the timeline"
ok "vm \"*\", bad fault requests -> 400, faults recorded"

# --- bad_event: the next `count` documents (GETs answered 200; not a POST, not compute) carry
#     the real events unchanged and one malformed event more, each kind in turn; the
#     DocumentIncarnation does not move; then the documents are whole again
fault '{"vm":"*","answer":500,"count":0}' # clears what the 503s above left on vm_1 and vm_2
create '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":3600}' >/dev/null
create '{"EventType":"Freeze","FaultDomain":1,"NoticeSeconds":3600}' >/dev/null
real=$(imds vm_2)
eq "$(echo "$real" | jq '.Events | length')" 2 "two real events"
# the kind of malformation of each event, "ok" for a well-formed one
kinds='[.Events[] | if has("EventId") | not then "EventId missing" elif has("EventType") | not then "EventType missing"
    elif has("EventStatus") | not then "EventStatus missing" elif (.Resources | type) != "array" then "Resources a string"
    elif (.NotBefore | type) != "string" then "NotBefore a number" else "ok" end]'
fault '{"vm":"vm_2","answer":"bad_event","count":5}'
eq "$(code -H Metadata:true -d '{"StartRequests":[]}' "$(U vm_2)")" 200 "a POST"
eq "$(code -H Metadata:true "$B/vm_2/metadata/instance/compute?api-version=2021-02-01")" 200 "compute"
seen=()
for i in 1 2 3 4 5; do
    d=$(imds vm_2)
    echo "$d" | jq -e . >/dev/null || fail "bad_event document $i is not JSON: $d"
    eq "$(echo "$d" | jq -c '.DocumentIncarnation')" "$(echo "$real" | jq -c .DocumentIncarnation)" "document $i: DocumentIncarnation"
    eq "$(echo "$d" | jq -c "$kinds | map(select(. == \"ok\")) | length")" 2 "document $i: the two real events well-formed"
    eq "$(echo "$d" | jq --argjson real "$real" '[.Events[] | select(IN($real.Events[]))] | length')" 2 "document $i: the real events unchanged"
    eq "$(echo "$d" | jq '.Events | length')" 3 "document $i: one event more"
    seen+=("$(echo "$d" | jq -r "$kinds | map(select(. != \"ok\"))[0]")")
done
eq "$(imds vm_2)" "$real" "after count documents: the real document again"
eq "$(printf '%s\n' "${seen[@]}" | sort -u | wc -l)" 5 "five documents, five kinds of malformed event (${seen[*]})"
eq "$(timeline | jq -c '[.[] | select(.fault == "bad_event") | .malformed]')" "$(printf '%s\n' "${seen[@]}" | jq -R . | jq -sc .)" "get facts: fault bad_event, malformed as seen"
eq "$(state | jq -c '[.vms[] | .incarnation] | unique')" "[$(echo "$real" | jq .DocumentIncarnation)]" "no incarnation moved"
fault '{"vm":"*","answer":"bad_event","count":1}'
for vm in vm_0 vm_3; do
    eq "$(imds $vm | jq -c "$kinds | map(select(. != \"ok\")) | length") $(imds $vm | jq -c "$kinds | map(select(. != \"ok\")) | length")" \
        "1 0" "vm \"*\": one malformed event in $vm's next document, none in the one after"
done
ok "bad_event: count documents with the real events intact and one malformed event more"
sim_stop

# --- quirks: a slow first call; idle disable resets DocumentIncarnation. A 2 s first-call
#     delay against a fast call given 1.5 s, and 3 s of idleness to disable the service, so
#     that slow process starts on a loaded machine cannot blur the two (nor disable it early).
sim_start --vms 2 --fault-domains 2 --first-call-delay 2 --idle-disable 3 --rate-limit 0
t0=$(now_ms); code -H Metadata:true "$(U vm_0)" >/dev/null; t1=$(now_ms)
[ $((t1 - t0)) -ge 1900 ] || fail "first call took $((t1 - t0)) ms, expected >= 2000"
t0=$(now_ms); code -H Metadata:true "$(U vm_0)" >/dev/null; t1=$(now_ms)
[ $((t1 - t0)) -lt 1500 ] || fail "second call took $((t1 - t0)) ms"
ok "--first-call-delay: the first request is slow, the next fast"
create '{"EventType":"Freeze","Resources":["vm_1"],"NoticeSeconds":900}' >/dev/null
create '{"EventType":"Freeze","Resources":["vm_1"],"NoticeSeconds":900}' >/dev/null
eq "$(imds vm_0 | jq .DocumentIncarnation)" 3 "incarnation 3 after two events"
sleep 4
t0=$(now_ms); d=$(imds vm_0); t1=$(now_ms)
eq "$(echo "$d" | jq -c '[.DocumentIncarnation, (.Events|length)]')" '[1,2]' "idle: incarnation restarts from 1"
[ $((t1 - t0)) -ge 1900 ] || fail "first call after idle took $((t1 - t0)) ms"
eq "$(state | jq '.vms[0].enabled')" true "enabled again"
sim_stop
ok "--idle-disable: DocumentIncarnation restarts from a low value, first call slow again"
echo "imds_sim_faults: all passed"
