#!/usr/bin/env bash
# kill -9 of the agent while its prepare hook runs: after a restart the run is reported as
# "interrupted" and never re-run silently, not even on a new order; the term survives too.
source "${SC_SRC:-.}/tests/peer/agent_testlib.sh"

sim_start --vms 2 --fault-domains 2
peer_start vm_1 "tcp://127.0.0.1:*" --insecure
make_hook
echo 30 >"$TMP/hook_sleep"
ARGS=(--members "vm_1=127.0.0.1:$PEER_PORT" --insecure --standalone-after 600)
agent_start vm_0 "${ARGS[@]}"
M='.msg.from == "vm_0"'
wait_for 10 "$M and .msg.type == \"hello\""
EV=$(sim_event '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":900}')
wait_for 5 "$M and .msg.type == \"document\" and .msg.incarnation == 2"
cmd leader 7
cmd order 7 prepare "$EV"
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.state == \"started\""
for _ in $(seq 50); do ls "$TMP"/hook-*.pid >/dev/null 2>&1 && break; sleep 0.1; done
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
ok "agent killed while its hook ran"

agent_start vm_0 "${ARGS[@]}"
wait_for 10 "$M and .msg.type == \"hello\"" 2
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.state == \"interrupted\" and .msg.event == \"$EV\" and .msg.phase == \"prepare\""
grep -q 'interrupted by the previous stop' "$TMP/agent.err" || fail "interrupted run not logged"
ok "restart reports the run as interrupted"

cmd order 6 prepare "$EV"
wait_for 5 "$M and .msg.type == \"nack\" and (.msg.reason | test(\"stale term 6 < 7\"))"
ok "the newest term survived the restart"

cmd order 7 prepare "$EV"
wait_for 5 "$M and .msg.type == \"hook_progress\" and .msg.state == \"interrupted\"" 2
sleep 1
[ "$(grep -c "^prepare $EV" "$TMP/hooks.log")" -eq 1 ] || fail "prepare was re-run: $(cat "$TMP/hooks.log")"
ok "a new order for the interrupted phase re-reports it, does not re-run"

agent_stop
