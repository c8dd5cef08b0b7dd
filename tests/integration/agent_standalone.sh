#!/usr/bin/env bash
# The standalone safety net: with no leader for --standalone-after, an event naming this VM
# whose NotBefore is closer than hook-timeout + safety-margin is prepared locally, and
# recovered once it has gone from IMDS; no approval without --standalone-approve. When a
# leader comes back, the standalone prepare is reported to it and the recover is left to it.
# The near events have 1800 s of notice, in reach at once (hook-timeout 5 + safety-margin 3600),
# FAR 86400 s: no NotBefore passes while the test runs, so every cancel lands on a Scheduled
# event however slow the machine (a late one would meet an event Azure started, another path).
# --standalone-after 4 lets the returning leader's 1 s beats stall for 3 s before the agent
# would go standalone again.
source "${SC_SRC:-.}/tests/peer/agent_testlib.sh"

sim_start --vms 2 --fault-domains 2
peer_start vm_1 "tcp://127.0.0.1:*" --insecure
make_hook
agent_start vm_0 --members "vm_1=127.0.0.1:$PEER_PORT" --insecure --standalone-after 4 \
    --hook-timeout 5 --safety-margin 3600
M='.msg.from == "vm_0"'
wait_for 20 "$M and .msg.type == \"heartbeat\" and .msg.standalone == true"
ok "no leader: safety net armed"

FAR=$(sim_event '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":86400}')
OTHER=$(sim_event '{"EventType":"Reboot","Resources":["vm_1"],"NoticeSeconds":1800}')
EV=$(sim_event '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":1800}')
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.origin == \"standalone\" and .msg.phase == \"prepare\" and .msg.state == \"done\" and .msg.event == \"$EV\""
grep -q "^prepare $EV standalone vm=vm_0 type=Reboot" "$TMP/hooks.log" || fail "hook env: $(cat "$TMP/hooks.log")"
grep -q "$FAR\|$OTHER" "$TMP/hooks.log" && fail "prepared an event that is far away or not ours"
grep -q 'standalone safety net: no leader, preparing' "$TMP/agent.err" || fail "not logged"
ok "near event of this VM prepared locally (far and foreign events left alone)"

# -f: a cancel that came too late (409, the event Started) fails here, not in a later wait
curl -sS -f -X DELETE "$B/control/events/$EV" >/dev/null || fail "could not cancel $EV before its NotBefore"
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.origin == \"standalone\" and .msg.phase == \"recover\" and .msg.state == \"done\" and .msg.event == \"$EV\""
ok "recovered locally once the event disappeared"
curl -sS "$B/control/state" | jq -e '[.. | objects | select(has("approvals")) | .approvals | length] | add == 0' >/dev/null || fail "an approval was posted without --standalone-approve"
ok "no approval without --standalone-approve"

EV3=$(sim_event '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":1800}')
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.origin == \"standalone\" and .msg.phase == \"prepare\" and .msg.state == \"done\" and .msg.event == \"$EV3\""
cmd beat 4
wait_for 10 "$M and .msg.type == \"heartbeat\" and .msg.standalone == false"
# the handover re-reports the prepare's "done" (counting "started" too would be satisfied
# before the leader came back, and the log checked too early)
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.origin == \"standalone\" and .msg.phase == \"prepare\" and .msg.state == \"done\" and .msg.event == \"$EV3\"" 2
grep -q 'handed over to the leader' "$TMP/agent.err" || fail "handover not logged"
# the agent must have seen EV3 gone (its next document to the leader lacks it) before we look
# for a local recover: a document from vm_0 without EV3, sent after the cancel
D="$M and .msg.type == \"document\" and ([.msg.document.Events[].EventId] | index(\"$EV3\") | not)"
n_docs=$(count "$D")
curl -sS -f -X DELETE "$B/control/events/$EV3" >/dev/null || fail "could not cancel $EV3 before its NotBefore"
wait_for 10 "$D" $((n_docs + 1))
sleep 2
grep -q "^recover $EV3" "$TMP/hooks.log" && fail "recovered locally although a leader took over"
ok "a returning leader gets the standalone prepare and the recover is left to it"
cmd order 4 recover "$EV3"
wait_for 10 "$M and .msg.type == \"hook_progress\" and .msg.origin == \"order\" and .msg.phase == \"recover\" and .msg.state == \"done\" and .msg.event == \"$EV3\""
ok "the leader's recover order runs"

agent_stop
