#!/usr/bin/env bash
# CURVE: an agent whose key is in the coordinator's keyring is accepted and reports; an agent
# with an unknown key is refused by ZAP (the peer receives nothing from it) and says so in
# its log; an agent speaking plain text to a CURVE server is refused too.
source "${SC_SRC:-.}/tests/peer/agent_testlib.sh"

K="$TMP/keys"
mkdir -p "$K"
for n in vm_0 vm_1 stranger; do
    "$BIN/sc-agent-peer" keygen --name "$n" --out "$K" >"$K/$n.line"
done
cat "$K/vm_0.line" "$K/vm_1.line" >"$K/keyring"
cat "$K/vm_0.line" "$K/vm_1.line" "$K/stranger.line" >"$K/keyring-stranger" # what it believes

sim_start --vms 3 --fault-domains 3
peer_start vm_1 "tcp://127.0.0.1:*" --key "$K/vm_1.key" --keys "$K/keyring"
make_hook

agent_start vm_2 --name stranger --members "vm_1=127.0.0.1:$PEER_PORT" --key "$K/stranger.key" \
    --keys "$K/keyring-stranger"
STRANGER=$AGENT_PID
sc_wait_until 5 grep -q 'refused the handshake.*member=vm_1.*kind=auth' "$TMP/agent.err" || fail "unknown key: refusal not logged"
sleep 2
[ "$(count '.msg')" -eq 0 ] || fail "the peer received messages from an unknown key"
[ "$(count '.reject')" -eq 0 ] || fail "the peer saw data from an unknown key"
ok "unknown key refused: the peer receives nothing"

agent_start vm_0 --members "vm_1=127.0.0.1:$PEER_PORT" --key "$K/vm_0.key" --keys "$K/keyring"
wait_for 10 '.msg.from == "vm_0" and .user == "vm_0" and .msg.type == "hello"'
wait_for 5 '.msg.from == "vm_0" and .msg.type == "document"'
ok "known key accepted; ZAP User-Id is the member name"
agent_stop

# its own log: the stranger, still running, writes to agent.err
AGENT_ERR="$TMP/plain-agent.err" agent_start vm_0 --name vm_0 --members "vm_1=127.0.0.1:$PEER_PORT" --insecure
PLAIN=$AGENT_PID
sleep 3
[ "$(count '.msg.type == "hello"')" -eq 1 ] || fail "a plain-text agent got through"
# It did reach the peer (not merely failed to connect) and was refused there. libzmq reports
# the mechanism mismatch as a protocol error when it reads the server's greeting, or with no
# detail when the server's close (a reset, with the greeting unread) comes first: CI saw both.
sc_wait_until 5 grep -Eq "refused the handshake.*member=vm_1.*kind=(protocol|other)" "$TMP/plain-agent.err" || fail "plain-text agent: no handshake refusal logged"
ok "plain-text agent refused"
AGENT_PID=$PLAIN
agent_stop
[ "$(count '.msg and .msg.from != "vm_0"')" -eq 0 ] || fail "stranger got through"
AGENT_PID=$STRANGER
agent_stop
