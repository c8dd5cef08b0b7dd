#!/usr/bin/env bash
# A partition into two halves (issue 11). Six VMs in three fault domains, each a network
# namespace (coord/netns.sh), three voters (vm_0, vm_1, vm_2). A Reboot rollout starts and its
# first prepares are held (the test decides when drains end: nothing is approved, so no
# handover, while the set is cut). The set is then cut in two halves of three VMs: the leader
# with one voter, and the third voter with two non-voters. The leader keeps a majority, so it
# keeps leading in its term (CheckQuorum holds); the lone voter campaigns over and over but
# its pre-votes win nothing, so it never raises the term (PreVote), and healed, it follows
# the same leader in the same term: a member back from a partition does not depose a healthy
# leader. The drains then go on and the rollout ends with every rule kept (check.py) and
# never two coordinators acting at once (one_leader.py).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"
. "$SC_SRC/tests/integration/coord/netns.sh"

ns_election prepare_hold
ok "$L leads term $T"
curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
wait_for 30 grep -q "^start prepare" "$HOOKLOG" || fail "no prepare started: $(cat "$HOOKLOG")"
ns_settle_lead # the leader whose VM drains first hands over: L, T are its successor's
o1=$(( (l + 1) % 3 )) # the voter on the leader's side
o2=$(( (l + 2) % 3 )) # the voter on the other side, with two non-voters
side=("$o2" $(( o1 + 3 )) $(( o2 + 3 ))) # the leader keeps vm_(l+3)
ok "the drain started; $L leads term $T"

ns_partition "${side[@]}"
cut=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
! ns_can "$o2" "$l" || fail "the partition does not cut vm_$o2 from $L"
ns_can "$l" "$o1" || fail "$L cannot reach vm_$o1 on its side"
# the lone voter campaigns (pre-vote) at least twice, and wins nothing
campaigns() {
    [ "$(awk -v w="$cut" '$1 >= w && (/-> pre_candidate/ || /pre-vote for term [0-9]* asked again/)' "$(coord_err "vm_$o2")" | wc -l)" -ge 2 ]
}
wait_for 20 campaigns || fail "vm_$o2, cut off, never campaigned: $(cst "vm_$o2" | jq -c '{role, leader, term}')"
[ "$(cst "vm_$o2" | jq .term)" = "$T" ] || fail "vm_$o2 raised the term while cut off: $(cst "vm_$o2" | jq -c '{role, term}')"
lead_kept() { leading "$L" && [ "$(cst "$L" | jq .term)" = "$T" ]; } # (may act: its lease renewed)
wait_for 10 lead_kept || fail "$L lost its lead while it had a majority: $(cst "$L" | jq -c '{role, term, may_act}')"
ok "cut into {$L, vm_$o1, vm_$((l + 3))} and {vm_$o2, vm_${side[1]}, vm_${side[2]}}: $L still leads term $T; vm_$o2 campaigned, term unchanged"

ns_heal
follows() { [ "$(role_of "vm_$o2")" = "voter $L" ] && [ "$(cst "vm_$o2" | jq .term)" = "$T" ]; }
wait_for 20 follows || fail "vm_$o2, healed, does not follow $L in term $T: $(cst "vm_$o2" | jq -c '{role, leader, term}')"
wait_for 10 lead_kept || fail "$L was deposed by the healed voter: $(cst "$L" | jq -c '{role, term}')"
! grep -q 'msg="role".*was=leader' "$(coord_err "$L")" || fail "$L stepped down: $(grep 'msg="role"' "$(coord_err "$L")")"
ok "healed: vm_$o2 follows $L in term $T; $L never stepped down"
for i in 0 1 2 3 4 5; do prepare_release "$i"; done
election_rollout_end "$L"
ok "the rollout went on: every rule kept, one coordinator acting at a time"
for i in 1 2 3 4 5; do sc_stop "coordinator vm_$i" "${CPIDS[$i]}" "$TMP/coord_$i.err"; done
coord_stop
