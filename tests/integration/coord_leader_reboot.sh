#!/usr/bin/env bash
# The leader's own VM rebooted by the event it coordinates (issue 11): three coordinators,
# three voters, six VMs in three fault domains, a Reboot rollout whose hooks take 2 s. The
# platform (imds-sim --on-impact) kills the leader's VM's agent and coordinator (kill -9) when
# that VM's impact begins, as the reboot would. The leader hands the lead over before its own
# VM's event is approved (or, failing that, the voters fail over when it dies): the event is
# approved by another member. The test starts the two daemons again, as the booted VM would,
# after the impact and once the coordinators saw the event end: the VM is down longer than
# --dead-after, as a real reboot is (a VM back sooner, its event already gone from IMDS, holds
# that event for confirm_ms, 60 s, with its fresh document's PENDING vote: docs/planner.md,
# "Disappears"). Its coordinator follows the new leader, its agent recovers it, and the rollout
# ends with every rule kept, checked from outside: one approval POST per event, approval only
# after every VM of the event was drained, one fault domain at a time, every drained VM
# recovered (check.py over the simulator's timeline and the hook log), never two coordinators
# that may act at once (one_leader.py, the killed one's acting ending at its kill).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

SIM_ARGS=(--on-impact "$(platform_cmd)")
election_rollout
i=${L#vm_}
vm_mortal "$i"
ok "$L leads (term $T); its VM's agent and coordinator die when its impact begins"

wait_for 40 vm_killed "$i" || fail "$L's VM never impacted: $(cst "$L" | jq -c .events)"
vm_reap "$i"
E=$(awk -v vm="$L" '$2 == vm { print $4; exit }' "$TMP/platform.log")
by=$(jq -r --arg e "$E" 'select(.kind == "post" and .status == 200 and (.events | index($e))) | .vm' "$TL")
[ "$(wc -l <<<"$by")" -eq 1 ] && [ "$by" != "$L" ] || fail "$E approved by \"$by\" (expected one POST, not from $L)"
# L led until its own VM's event: it handed the lead over for it, or it was acting when killed
h=$(grep -o "msg=\"handover\" to=[^ ]* .*$E" "$(coord_err "$L")" | head -1 | sed 's/^msg="handover" to=\([^ ]*\).*/\1/' || true)
if [ -n "$h" ]; then
    how="handed the lead over to $h for it"
elif grep 'msg="may act"' "$(coord_err "$L")" | tail -1 | grep -q 'value=true'; then
    how="died acting, the voters failed over"
else
    fail "$L no longer led when its VM's event $E came: $(grep -E 'msg="(role|may act)"' "$(coord_err "$L")" | tail -3)"
fi
ok "$L's VM rebooted by $E, approved by $by: $L $how"

wait_for 20 impact_over "$L" || fail "$L's impact did not end"
ended() { local n; n=$(leader 3) && cst "$n" | jq -e --arg e "$E" '[.events[] | select(.EventId == $e and .ended_ms == null)] == []' >/dev/null; }
wait_for 30 ended || fail "$E never ended for the coordinators: $(cst "$(leader 3)" | jq -c --arg e "$E" '.events[] | select(.EventId == $e)')"
agent_start "$i"
if [ "$L" = vm_0 ]; then VOTERS=3 COORD_WAIT=0 coord_start; else coord_i_start "$i" --voters 3; fi
follows() { local n; n=$(leader 3) && [ "$n" != "$L" ] && [ "$(cst "$L" | jq -r '.role + " " + (.leader // "")')" = "voter $n" ] && N=$n; }
wait_for 20 follows || fail "$L back does not follow: $(for j in 0 1 2; do cst "vm_$j" | jq -c '{self, role, leader, term, may_act}'; done)"
wait_for 20 grep -q "^end recover $L $E " "$HOOKLOG" || fail "$L not recovered after its reboot: $(grep " $L " "$HOOKLOG")"
ok "$L's daemons back after the impact: its coordinator follows $N, its agent recovered it"

election_rollout_end "$N"
ok "the rollout went on: every rule kept, one coordinator acting at a time"
for p in "${CPIDS[@]}"; do sc_stop coordinator "$p"; done
coord_stop
