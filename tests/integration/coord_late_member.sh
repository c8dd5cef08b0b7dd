#!/usr/bin/env bash
# A member that joins late (issue 11): six VMs in --members, three voters (vm_0 .. vm_2), a
# Reboot rollout over the three fault domains whose hooks take 2 s; vm_5 (fault domain 2, not a
# voter) has neither agent nor coordinator when it starts. Both are started once the rollout
# began, while the first fault domain drains (the second fault domain's prepare waits until
# vm_5 was seen, so that it has joined before its own event exists). vm_5 is seen by the
# leader (alive, its fault domain); its coordinator follows the leader as a non-voter and
# catches up the decision log it missed (its status names the same leader, its commit index
# reaches the leader's, its history is the leader's entry for entry) and acts on nothing; its
# event (with vm_2) is drained on it and approved under the rules: one approval POST per
# event, approval only after every VM of the event was drained, one fault domain at a time,
# every drained VM recovered (check.py over the simulator's timeline and the hook log), never
# two coordinators that may act at once (one_leader.py).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

LATE=5 election_rollout
# (rewritten before the second fault domain's event exists: its prepares run it)
write_hook 1 2 none "$(gate release seen)"
ok "three voters elected $L (term $T); the rollout started without vm_5"

agent_start 5
coord_i_start 5 --voters 3
N=""
seen() {
    N=$(leader 3) &&
        [ "$(cst "$N" | jq -c '.members[] | select(.name == "vm_5") | [.alive, .fault_domain]')" = "[true,2]" ]
}
wait_for 20 seen || fail "vm_5 not seen: $(cst "$(leader 3)" | jq -c '.members[] | select(.name == "vm_5")')"
ok "vm_5 joined while the first fault domain drains: seen by $N (fault domain 2)"
follows() {
    local l
    l=$(leader 3) && [ "$(cst vm_5 | jq -r '.role + " " + (.leader // "")')" = "follower $l" ]
}
wait_for 15 follows || fail "vm_5's coordinator does not follow: $(cst vm_5 | jq -c '{role, leader, term}')"
leader_wait 10 3 || fail "no single leader"
c=$(cst "$LEADER" | jq .commit_index)
caught_up() { [ "$(cst vm_5 | jq .commit_index)" -ge "$c" ]; }
wait_for 15 caught_up || fail "vm_5's commit index $(cst vm_5 | jq .commit_index) does not reach the leader's $c"
ok "vm_5's coordinator follows $(leader 3) as a non-voter, its commit index caught up ($c)"
release seen

election_rollout_end "$N"
E=$(jq -r 'select(.kind == "created" and .fault_domain == 2) | .event' "$TL")
[ -n "$(first_hook end prepare vm_5 "$E")" ] && [ -n "$(first_hook end recover vm_5 "$E")" ] ||
    fail "vm_5 not drained and recovered for its event $E: $(grep " vm_5 " "$HOOKLOG")"
leader_wait 10 3 || fail "no single leader after the rollout"
N=$LEADER
story() { "$SC_BIN/schedcoordctl" --state-dir "$(coord_dir "$1")" history --json | jq -c '[.[] | [.index, .term, .kind, .reason]]'; }
same_story() { N=$(leader 3) && [ "$(story "$N")" = "$(story vm_5)" ]; }
wait_for 15 same_story ||
    fail "vm_5's history differs from $N's: $(diff <(story "$N" | jq -c '.[]') <(story vm_5 | jq -c '.[]') | head -5)"
same_view() { [ "$(cst vm_5 | jq -c '[.leader, .commit_index]')" = "$(cst "$(leader 3)" | jq -c '[.self, .commit_index]')" ]; }
wait_for 10 same_view || fail "vm_5: $(cst vm_5 | jq -c '[.leader, .commit_index]'), the leader: $(cst "$(leader 3)" | jq -c '[.self, .commit_index]')"
! grep -Eq 'msg="(prepare ordered|recover ordered|approved|approval delegated)"' "$TMP/coord_5.err" ||
    fail "vm_5's coordinator acted: $(grep -E 'ordered|approv' "$TMP/coord_5.err" | head -3)"
ok "vm_5 drained and recovered for its event, approved once; its coordinator holds the leader's log ($(story vm_5 | jq length) entries) and decided nothing"
for p in "${CPIDS[@]}"; do sc_stop coordinator "$p"; done
coord_stop
