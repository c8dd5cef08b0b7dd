#!/usr/bin/env bash
# A partition isolating the leader with a minority (issue 11). Six VMs in three fault domains,
# each a network namespace (coord/netns.sh: IMDS stays reachable, the VMs' network is cut),
# three voters (vm_0, vm_1, vm_2, one per fault domain), a Reboot rollout whose hooks take 2 s.
# Once the first prepare hook has started, the leader's VM and one non-voting VM are cut off
# from the other four. The other two voters elect a leader of a higher term; the cut-off one,
# hearing no majority within its lease (CheckQuorum), stops acting and orders and approves
# nothing while apart. Healed, it learns the new term and follows. The rollout ends with
# every rule kept (check.py over the simulator's timeline and the hook log) and never two
# coordinators acting at once (one_leader.py over their logs). Members are not declared dead
# meanwhile (--dead-after 60): the new leader waits for the cut-off VMs' drains.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"
. "$SC_SRC/tests/integration/coord/netns.sh"

hook2() { write_hook "$1" 2; }
ns_election hook2
ok "$L leads term $T; voters vm_0..vm_2 over three fault domains"
curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
wait_for 30 grep -q "^start prepare" "$HOOKLOG" || fail "no prepare started: $(cat "$HOOKLOG")"
ns_settle_lead # the leader whose VM drains first hands over: L, T are its successor's
other=$(( (l + 3) % 6 )) # a non-voter (vm_3, 4 or 5), in the leader's fault domain

ns_partition "$l" "$other"
cut=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
! ns_can "$l" $(( (l + 1) % 3 )) || fail "the partition does not cut $L from the other voters"
ns_can "$l" "$other" || fail "$L cannot reach vm_$other on its side"
new_leader() {
    local i
    for i in 0 1 2; do
        [ "$i" != "$l" ] && leading "vm_$i" && [ "$(cst "vm_$i" | jq .term)" -gt "$T" ] && N=vm_$i && return 0
    done
    return 1
}
wait_for 20 new_leader || fail "the majority elected nobody: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, term, may_act}'; done)"
not_acting() { [ "$(cst "$L" | jq .may_act)" = false ]; }
wait_for 10 not_acting || fail "$L, cut off, still may act: $(cst "$L" | jq -c '{role, term, may_act}')"
ok "$L cut off with vm_$other: $N leads term $(cst "$N" | jq .term); $L no longer acts"

ns_heal
wait_for 20 follows_new "$L" "$T" || fail "$L, healed, does not follow a new leader: $(cst "$L" | jq -c '{role, leader, term}')"
followed=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
# from the cut until it followed: nothing ordered, approved or delegated once its lease was gone
stopped=$(awk -v w="$cut" '$1 >= w && /msg="may act" value=false/ { print $1; exit }' "$(coord_err "$L")")
[ -n "$stopped" ] || fail "$L never said it stopped acting after the cut"
acted=$(awk -v w="$stopped" -v f="$followed" '$1 > w && $1 <= f' "$(coord_err "$L")" | grep -E 'msg="(prepare ordered|recover ordered|approved|approval delegated)"' || true)
[ -z "$acted" ] || fail "$L acted after its lease was gone: $acted"
ok "healed: $L follows $F and acted on nothing after its lease ran out ($stopped)"
election_rollout_end "$F"
ok "the rollout went on: every rule kept, one coordinator acting at a time"
for i in 1 2 3 4 5; do sc_stop "coordinator vm_$i" "${CPIDS[$i]}" "$TMP/coord_$i.err"; done
coord_stop
