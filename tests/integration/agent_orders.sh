#!/usr/bin/env bash
# The agent against imds-sim and a test peer (insecure transport): it reports each incarnation
# once, runs a hook only on an order of the current term, refuses an older term, never runs a
# phase twice, runs a recover for an event it never prepared (SCHEDCOORD_PREPARED=0), runs a
# new drain attempt, and posts approve_via; its heartbeats say how long its IMDS has been
# failing.
source "${SC_SRC:-.}/tests/peer/agent_testlib.sh"

sim_start --vms 3 --fault-domains 3
peer_start vm_1 "tcp://127.0.0.1:*" --insecure
make_hook
agent_start vm_0 --members "vm_1=127.0.0.1:$PEER_PORT" --insecure --standalone-after 600
M='.msg.from == "vm_0"'

wait_for 10 "$M and .msg.type == \"hello\" and .msg.fault_domain == 0"
wait_for 5 "$M and .msg.type == \"document\" and .msg.incarnation == 1"
wait_for 5 "$M and .msg.type == \"heartbeat\"" 2
ok "hello, first document and heartbeats"

# heartbeats say how long IMDS has been failing: 0 while it answers, then growing
wait_for 5 "$M and .msg.type == \"heartbeat\" and .msg.imds_down_ms == 0"
curl -sS -f -d '{"vm":"vm_0","answer":503,"count":2}' "$B/control/faults" >/dev/null || fail "fault"
wait_for 15 "$M and .msg.type == \"heartbeat\" and .msg.imds_down_ms >= 1000"
up=$(count "$M and .msg.type == \"heartbeat\" and .msg.imds_down_ms == 0")
wait_for 20 "$M and .msg.type == \"heartbeat\" and .msg.imds_down_ms == 0" $((up + 1))
ok "heartbeat imds_down_ms: 0, growing while IMDS fails, 0 again"

EV=$(sim_event '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":900}')
wait_for 5 "$M and .msg.type == \"document\" and .msg.incarnation == 2"
EV2=$(sim_event '{"EventType":"Redeploy","Resources":["vm_2"],"NoticeSeconds":900}')
wait_for 5 "$M and .msg.type == \"document\" and .msg.incarnation == 3"
sleep 3 # three more polls of the same document
[ "$(count "$M and .msg.type == \"document\" and .msg.incarnation == 2")" -eq 1 ] || fail "incarnation 2 reported more than once"
[ "$(count "$M and .msg.type == \"document\" and .msg.incarnation == 3")" -eq 1 ] || fail "incarnation 3 reported more than once"
[ "$(count "$M and .msg.type == \"document\"")" -eq 3 ] || fail "unexpected document reports"
ok "each incarnation reported once"

cmd doc_request
wait_for 5 "$M and .msg.type == \"document\" and .msg.incarnation == 3" 2
ok "doc_request answered with the document"

sleep 1
[ ! -s "$TMP/hooks.log" ] || fail "a hook ran without an order"
cmd leader 5
cmd order 5 prepare "$EV"
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.state == \"done\" and .msg.phase == \"prepare\""
grep -q "^prepare $EV order vm=vm_0 type=Reboot res=vm_0 json={\"EventId\":\"$EV\"" "$TMP/hooks.log" || fail "hook env/stdin: $(cat "$TMP/hooks.log")"
ok "prepare runs on an order of the current term, with the event in env and stdin"

cmd order 4 prepare "$EV2"
wait_for 5 "$M and .msg.type == \"nack\" and (.msg.reason | test(\"stale term 4 < 5\"))"
sleep 1
grep -q "$EV2" "$TMP/hooks.log" && fail "an order of an old term ran"
grep -q 'order refused.*stale term 4 < 5' "$TMP/agent.err" || fail "stale order not logged"
ok "an order of an older term is refused (nack, logged), not run"

cmd order 5 prepare "$EV"
wait_for 5 "$M and .msg.type == \"hook_progress\" and .msg.state == \"done\" and .msg.phase == \"prepare\"" 2
sleep 0.5
[ "$(grep -c "^prepare $EV" "$TMP/hooks.log")" -eq 1 ] || fail "prepare ran twice"
ok "a second order for the same phase re-reports, does not re-run"

cmd order 5 recover "$EV2"
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.state == \"done\" and .msg.phase == \"recover\" and .msg.event == \"$EV2\""
grep -q "^recover $EV2 order .*\"prepared\":false} attempt=1 prepared=0\$" "$TMP/hooks.log" ||
    fail "recover without prepare: not told so: $(cat "$TMP/hooks.log")"
ok "recover without prepare runs, with SCHEDCOORD_PREPARED=0 and \"prepared\": false"

cmd order 6 recover "$EV"
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.state == \"done\" and .msg.phase == \"recover\" and .msg.order_term == 6"
grep -q "^recover $EV order .* prepared=1\$" "$TMP/hooks.log" || fail "recover after prepare: $(cat "$TMP/hooks.log")"
ok "a newer term is adopted"

# a retried drain: attempt 2's prepare runs after attempt 1's recover; attempt 1 is not re-run
cmd order 6 prepare "$EV" 2
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.state == \"done\" and .msg.phase == \"prepare\" and .msg.attempt == 2"
grep -q "^prepare $EV order .* attempt=2 prepared=\$" "$TMP/hooks.log" || fail "attempt 2 not in the hook env: $(cat "$TMP/hooks.log")"
cmd order 6 prepare "$EV" 1
wait_for 5 "$M and .msg.type == \"hook_progress\" and .msg.state == \"done\" and .msg.phase == \"prepare\" and (.msg.attempt // 1) == 1" 3
[ "$(grep -c "^prepare $EV" "$TMP/hooks.log")" -eq 2 ] || fail "an older attempt ran again: $(cat "$TMP/hooks.log")"
ok "attempt 2 of a drain runs its prepare again (SCHEDCOORD_ATTEMPT=2); attempt 1 is only re-reported"

cmd approve_via 6 "$EV2"
wait_for 5 "$M and .msg.type == \"approve_result\" and .msg.http_status == 200 and .msg.result == \"OK\""
curl -sS "$B/control/state" | jq -e --arg e "$EV2" '[.. | objects | select(.EventId? == $e)][0].approvals | length >= 1' >/dev/null || fail "approval not seen by imds-sim"
ok "approve_via posts through this VM's IMDS"

agent_stop
ok "clean exit on SIGTERM"
