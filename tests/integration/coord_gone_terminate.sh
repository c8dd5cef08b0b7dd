#!/usr/bin/env bash
# A member terminated for good (issue 11): six VMs in three fault domains, three voters
# (vm_0 .. vm_2) and a fourth coordinator on vm_5 (fault domain 2, not a voter). A Terminate
# of vm_5 is drained on it and approved once; when its impact begins the VM is deleted, and
# the platform (imds-sim --on-impact) kills its agent and its coordinator (kill -9), which
# never come back. The coordinators mark the member gone (every voter's status), and the rest
# of the set is still served: a later Reboot rollout over the remaining VMs (fault domain 2 is
# vm_2 alone now) completes under the rules, and nothing waits for the gone VM — no new
# leader's start grace runs out waiting for it, no order goes to it. Checked from outside:
# one approval POST per event, approval only after every VM of the event was drained, one
# fault domain at a time, every drained VM recovered but the terminated one (check.py over the
# simulator's timeline and the hook log), never two coordinators that may act at once
# (one_leader.py).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100 --on-impact "$(platform_cmd)"
set_start 6
VOTERS=3 coord_start
coords_start 3
coord_i_start 5 --voters 3
leader_wait 30 3 || fail "no leader: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, term, may_act}'; done)"
L=$LEADER
seen() { L=$(leader 3) && [ "$(cst "$L" | jq '[.members[] | select(.alive and .fault_domain >= 0)] | length')" -eq 6 ]; }
wait_for 20 seen || fail "members not all seen by $L: $(cst "$L" | jq -c '[.members[] | {name, alive, fault_domain}]')"
follows() { L=$(leader 3) && [ "$(cst vm_5 | jq -r '.role + " " + (.leader // "")')" = "follower $L" ]; }
wait_for 15 follows || fail "vm_5's coordinator does not follow $L: $(cst vm_5 | jq -c '{role, leader}')"
vm_mortal 5
ok "$L leads three voters; vm_5's agent and coordinator (a follower) run"

# 30000 simulated s of notice (300 s, beyond the test): the start is ours, by approval
X=$(new_event '{"EventType":"Terminate","Resources":["vm_5"],"NoticeSeconds":30000,"DurationInSeconds":30}')
wait_for 30 vm_killed 5 || fail "vm_5 never impacted: $(cst "$(leader 3)" | jq -c .events)"
vm_reap 5
[ -n "$(first_hook end prepare vm_5 "$X")" ] || fail "vm_5 deleted before it was drained: $(cat "$HOOKLOG")"
ok "vm_5 drained for its Terminate, approved; deleted, its agent and coordinator killed"
wait_for 20 ev_over "$X" || fail "the Terminate did not complete: $(cst "$(leader 3)" | jq -c .events)"
gone_for_all() {
    local i
    for i in 0 1 2; do
        [ "$(cst "vm_$i" | jq -r '.members[] | select(.name == "vm_5") | .state')" = gone ] || return 1
    done
}
wait_for 20 gone_for_all ||
    fail "vm_5 not gone for every voter: $(for i in 0 1 2; do cst "vm_$i" | jq -c '[.self, (.members[] | select(.name == "vm_5") | .state)]'; done)"
gone_at=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
ok "vm_5 is gone for every voter"

curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
wait_for 50 completed_ge 4 || fail "the rollout did not complete: $(cst "$(leader 3)" | jq -c .events)"
wait_for 20 hooks_settled vm_5 || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 4 --all-approved
one_leader
fd2=$(jq -c 'select(.kind == "created" and .fault_domain == 2 and .event_type == "Reboot") | .resources' "$TL")
[ "$fd2" = '["vm_2"]' ] || fail "fault domain 2's Reboot: resources $fd2"
ok "a Reboot rollout over the remaining VMs completed under the rules (fault domain 2: vm_2 alone)"

leader_wait 10 3 || fail "no single leader after the rollout"
N=$LEADER
[ "$(cst "$N" | jq -r '.members[] | select(.name == "vm_5") | .state')" = gone ] || fail "vm_5 is not gone any more"
orders=$("$SC_BIN/schedcoordctl" --state-dir "$(coord_dir "$N")" history --json |
    jq -c --arg x "$X" '[.[] | select((.kind | test("ordered")) and (.data.vms | index("vm_5")) and .data.event_id != $x)]')
[ "$orders" = "[]" ] || fail "orders to the gone vm_5: $orders"
waited=$(awk -v g="$gone_at" '$1 >= g' "$TMP"/coord*.err | grep 'msg="start grace over' | grep -v 'why="every member reported"' || true)
[ -z "$waited" ] || fail "a start grace waited after vm_5 was gone: $waited"
ok "nothing waited for the gone vm_5: no order to it, every new leader's start grace ended on the members' reports"
for p in "${CPIDS[@]}"; do sc_stop coordinator "$p"; done
coord_stop
