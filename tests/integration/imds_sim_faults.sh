#!/usr/bin/env bash
# imds-sim fault injection (POST /control/faults: 500, 429, 410, timeout, garbage, empty,
# reset; count) and the service's own quirks (--first-call-delay, --idle-disable).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
fault() { curl -sS -f -d "$1" "$B/control/faults" >/dev/null; }
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
