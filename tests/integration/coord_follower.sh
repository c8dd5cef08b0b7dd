#!/usr/bin/env bash
# Two coordinators on one set, as the README deploys them (one per VM), with one voter (vm_0):
# vm_1's coordinator is a non-voting follower. It keeps the agents' reports (status shows the
# members and events) and receives the leader's decision log, but never orders, approves or
# sends leader messages, so a rollout still has one approval POST per event, fault domains one
# at a time. Its history tells the leader's story, entry for entry. An agent given the members
# in another order (another first member) warns, from the leader's members_hash.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
coord_start
F="$TMP/coord1"
"$SC_BIN/schedcoord-coordinator" --name vm_1 --imds-url "$B/vm_1" --members "$MEMBERS" \
    --state-dir "$F" --insecure --deadline-margin-s 1 --voters 1 >"$TMP/coord1.out" 2>"$TMP/coord1.err" &
F_PID=$!
PIDS+=("$F_PID") # killed on exit, even when the test fails
fctl() { "$SC_BIN/schedcoordctl" --state-dir "$F" "$@"; }
wait_for 10 fctl status --json || fail "second coordinator did not start: $(cat "$TMP/coord1.err")"
wait_for 20 all_members_seen 6 || fail "members not all seen"
follows_vm_0() { [ "$(fctl status --json | jq -r '.role + " " + .leader')" = "follower vm_0" ]; }
wait_for 10 follows_vm_0 || fail "vm_1's coordinator: $(fctl status --json | jq -c '{role, leader}')"
[ "$(ctl status --json | jq -r '.role + " " + .leader')" = "leader vm_0" ] || fail "vm_0's coordinator does not lead"
fctl pause >/dev/null 2>"$TMP/fpause.err" && fail "the follower accepted a pause"
grep -q "follows and approves nothing: run schedcoordctl pause on vm_0" "$TMP/fpause.err" ||
    fail "pause on the follower: $(cat "$TMP/fpause.err")"
ok "the first member leads, the other coordinator follows (and refuses pause: vm_0 leads)"

rollout_checked 3 90
# the follower kept the reports, and decided nothing
[ "$(fctl status --json | jq '[.members[] | select(.alive)] | length')" -eq 6 ] ||
    fail "the follower does not see the members: $(fctl status --json | jq -c .members)"
! grep -Eq 'msg="(prepare ordered|recover ordered|approved|approval delegated|role change)"' "$TMP/coord1.err" ||
    fail "the follower acted: $(grep -E 'ordered|approv|role' "$TMP/coord1.err" | head -5)"
story() { "$@" history --json | jq -c '[.[] | [.index, .term, .kind, .reason]]'; }
same_story() { [ "$(story ctl)" = "$(story fctl)" ]; }
wait_for 10 same_story || fail "the follower's history differs: $(diff <(story ctl | jq -c '.[]') <(story fctl | jq -c '.[]') | head -5)"
n=$(fctl history --json | jq '[.[] | select(.kind | test("ordered|approval"))] | length')
[ "$n" -gt 6 ] || fail "the follower's history has only $n orders and approvals"
ok "rollout with two coordinators: one POST per event, FDs serialised; the follower decided nothing and holds the leader's log"

# Configuration drift: vm_5's agent restarted with the same members in another order (so it
# would take another member for the first). The leader's members_hash tells it.
kill "${AGENT_PIDS[5]}"
wait "${AGENT_PIDS[5]}" 2>/dev/null || true
# (vm_3 and vm_4 swapped: the same voters, vm_0 .. vm_2, so that it still reaches the leader)
REV=$(echo "$MEMBERS" | tr ',' '\n' | awk 'NR == 4 { l = $0; next } { print } NR == 5 { print l }' | paste -sd, -)
"$SC_BIN/schedcoord-agent" --name vm_5 --imds-url "$B/vm_5" --members "$REV" \
    --state-dir "$TMP/agent_5" --prepare-hook "$TMP/agent_5/hook" --recover-hook "$TMP/agent_5/hook" \
    --insecure --poll-interval 0.5 --standalone-after 600 --hook-timeout 30 --log-level warn \
    >>"$TMP/agent_5.out" 2>>"$TMP/agent_5.err" &
AGENT_PIDS[5]=$!
wait_for 10 grep -q "msg=\"the leader's --members differs from ours" "$TMP/agent_5.err" ||
    fail "vm_5's agent did not notice its reordered --members: $(tail -5 "$TMP/agent_5.err")"
sleep 2 # two more leader messages
[ "$(grep -c "differs from ours" "$TMP/agent_5.err")" -eq 1 ] || fail "the drift warning repeats"
for i in 0 1 2 3 4; do
    ! grep -q "differs from ours" "$TMP/agent_$i.err" || fail "vm_$i warns of a drift it does not have"
done
ok "an agent whose --members is in another order says so, once"
sc_stop coordinator "$F_PID"
coord_stop
