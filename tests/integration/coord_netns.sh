#!/usr/bin/env bash
# End to end across a network, as the README deploys it: three "VMs", each a network namespace
# of its own (coord/netns.sh: veths into bridges), each running schedcoord-agent and
# schedcoord-coordinator over CURVE on its own address — no loopback between VMs. imds-sim
# listens on a bridge of its own. A maintenance rollout goes through with one approval POST per
# event, one fault domain at a time, every VM recovered; vm_0's coordinator leads and the agents
# of the other VMs reached it over the VMs' network; the coordinators of vm_1 and vm_2 follow. A
# coordinator given --insecure with these (non-local) endpoints refuses to start.
# Needs root and network namespaces (CI has both); skipped (77) otherwise.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"
. "$SC_SRC/tests/integration/coord/netns.sh"

ns_setup 3
sim_start --vms 3 --fault-domains 3 --time-scale 100 --complete-after 100
ok "3 VMs in their own network namespaces, reaching imds-sim over a bridge"

# plain text is for one machine only: these endpoints are on three
rc=0
timeout 30 ip netns exec "${NS[0]}" "$SC_BIN/schedcoord-coordinator" --name vm_0 --imds-url "$B/vm_0" \
    --members "$MEMBERS" --state-dir "$TMP/insecure" --insecure >/dev/null 2>"$TMP/insecure.err" || rc=$?
[ "$rc" -eq 2 ] && grep -qF "member vm_0's endpoint tcp://10.214.$NS_X.10:7700 is not on this machine" "$TMP/insecure.err" ||
    fail "--insecure with remote endpoints: exit $rc: $(cat "$TMP/insecure.err")"
ok "--insecure refused with endpoints on other hosts"

# one coordinator and one agent per VM, over CURVE; vm_0 the only voter: it leads
ns_start --voters 1
seen() { [ "$(cst vm_0 | jq '[.members[] | select(.alive and .fault_domain >= 0)] | length')" = 3 ]; }
wait_for 30 seen || fail "vm_0's coordinator does not see every member: $(cst vm_0 | jq -c .members)"
[ "$(cst vm_0 | jq -r .role)" = leader ] || fail "vm_0 does not lead"
for i in 1 2; do
    r=$(cst "vm_$i" | jq -r .role)
    [ "$r" = follower ] || fail "vm_$i's coordinator: $r"
done
# vm_0's coordinator has connections from the other VMs' addresses, over their network
peers=$(ip netns exec "${NS[0]}" ss -Htn state established '( sport = :7700 )' | awk '{print $4}' |
    sed 's/:[0-9]*$//' | sort -u | tr '\n' ' ')
for i in 1 2; do
    [[ " $peers" == *" 10.214.$NS_X.$((10 + i)) "* ]] || fail "no connection from vm_$i to vm_0's coordinator: $peers"
done
ok "over CURVE across the network: vm_0 leads, vm_1 and vm_2 follow, every agent reports"

# 30000 simulated s of notice (300 s, more than the test lasts): every event is ours to approve
curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
wait_for 90 completed_ge 3 || fail "rollout not complete: $(cst vm_0 | jq -c .events)"
wait_for 20 hooks_settled || fail "not every VM recovered: $(cat "$HOOKLOG")"
check 3 --events 3 --all-approved
ok "rollout across the network: one POST per event, fault domains one at a time, all recovered"

sc_stop "coordinator vm_0" "$COORD_PID" "$TMP/coord.err"
for i in 1 2; do sc_stop "coordinator vm_$i" "${CPIDS[$i]}" "$TMP/coord_$i.err"; done
