#!/usr/bin/env bash
# Failover mid-drain (issue 11): three coordinators, three voters, six VMs in three fault
# domains, a Reboot rollout whose hooks take 2 s. Once the first prepare hook has started, the
# leader's coordinator is killed (kill -9). A voter takes over, and the rollout ends with every
# rule kept, checked from outside: one approval POST per event, approval only after every VM
# of the event was drained, one fault domain at a time, every drained VM recovered (check.py
# over the simulator's timeline and the hook log), and never two coordinators that may act at
# once (their "may act" log lines, the killed one's ending at its kill). The killed one started
# again follows. The checker of that last rule is shown able to fail first.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

# the one-leader checker fails on two overlapping acting intervals
mkdir -p "$TMP/synthetic"
printf '%s\n' '2026-01-01T00:00:01.000Z schedcoord-coordinator level=notice msg="may act" value=true term=1' \
    '2026-01-01T00:00:05.000Z schedcoord-coordinator level=notice msg="may act" value=false term=1' >"$TMP/synthetic/coord.err"
printf '%s\n' '2026-01-01T00:00:04.000Z schedcoord-coordinator level=notice msg="may act" value=true term=2' >"$TMP/synthetic/coord_1.err"
! python3 "$SC_SRC/tests/integration/coord/one_leader.py" "$TMP/synthetic/coord.err" "$TMP/synthetic/coord_1.err" >/dev/null ||
    fail "the one-leader checker missed an overlap"
echo "vm_0 1767225603" >"$TMP/synthetic/killed" # vm_0 killed at 00:00:03: no overlap then
python3 "$SC_SRC/tests/integration/coord/one_leader.py" --killed "$TMP/synthetic/killed" \
    "$TMP/synthetic/coord.err" "$TMP/synthetic/coord_1.err" >/dev/null || fail "the one-leader checker: a killed leader's interval"
ok "the one-leader checker finds an overlap, and ends a killed coordinator's interval at its kill"

election_rollout
kill -9 "$(coord_pid "$L")"
echo "$L $(date +%s.%N)" >>"$TMP/killed"
ok "killed $L (term $T) while the first fault domain drains"
new_leader() { local l; l=$(leader 3) && [ "$l" != "$L" ] && [ "$(cst "$l" | jq .term)" -gt "$T" ] && N=$l; }
wait_for 15 new_leader || fail "no new leader: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, term, may_act}'; done)"
ok "$N leads term $(cst "$N" | jq .term)"
if [ "$L" = vm_0 ]; then VOTERS=3 COORD_WAIT=0 coord_start; else coord_i_start "${L#vm_}" --voters 3; fi
wait_for 15 follows_new "$L" "$T" || fail "$L restarted does not follow a new leader: $(cst "$L" | jq -c '{role, leader, term}')"
election_rollout_end "$F"
ok "the rollout went on under $F: every rule kept; $L, back, follows"
for p in "${CPIDS[@]}"; do sc_stop coordinator "$p"; done
coord_stop
