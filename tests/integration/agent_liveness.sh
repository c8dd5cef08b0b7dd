#!/usr/bin/env bash
# The agent's heartbeat at its default (issue 11 re-chose it: liveness only, not on the
# failover path): one every 5 s to each coordinator, not every second. It sends on a grid of
# --heartbeat-interval (a late one is never followed by an early one), so two in a row are at
# least 3 s apart whatever the load, where the old default (1 s) gave about 1 s.
source "${SC_SRC:-.}/tests/peer/agent_testlib.sh"

sim_start --vms 2 --fault-domains 2
peer_start vm_1 "tcp://127.0.0.1:*" --insecure
make_hook
AGENT_FAST_HB=0 agent_start vm_0 --members "vm_1=127.0.0.1:$PEER_PORT" --insecure
HB='.msg.from == "vm_0" and .msg.type == "heartbeat"'
wait_for 20 "$HB" 2
gap=$(jq -s "[.[] | select($HB) | .t] | .[1] - .[0]" "$TMP/peer.log")
awk -v g="$gap" 'BEGIN { exit !(g >= 3) }' || fail "two heartbeats $gap s apart at the default"
ok "heartbeats at the default interval: the first two $gap s apart"
agent_stop
