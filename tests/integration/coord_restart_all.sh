#!/usr/bin/env bash
# Every coordinator dies at once (issue 11): three coordinators, three voters, six VMs in three
# fault domains, a Reboot rollout whose hooks take 2 s. Once the first prepare hook has started,
# all three coordinators are killed together (one kill -9): no member is left to lead, nor to
# remember anything but its store. The agents go on; the first fault domain's prepares end
# while no coordinator runs (their ends wait for the kill), and all three are started again
# only then. They elect a leader of a newer term from their stores, which learns how the
# drains it inherited ended, and the rollout ends with every rule kept, checked from outside:
# one approval POST per event (none approved twice), approval only after every VM of the event
# was drained, one fault domain at a time, every drained VM recovered (check.py over the
# simulator's timeline and the hook log), and never two coordinators that may act at once
# (one_leader.py, the killed ones' acting ending at the kill). The decision log orders no drain
# twice.
# The prepares' results are reported while no coordinator leads (the agents re-send them when
# they reconnect, before the election; the followers decide nothing): the new leader asks
# again for every hook under way (sc_coord_restart.c, s_ask_running). Before it did, it waited
# for drains that had ended ("waiting for vm_0 (preparing), vm_3 (preparing)") until NotBefore.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

election_rollout "$(gate release killed)"
kill -9 "$COORD_PID" "${CPIDS[1]}" "${CPIDS[2]}"
t=$(date +%s.%N)
for i in 0 1 2; do echo "vm_$i $t" >>"$TMP/killed"; done
wait "$COORD_PID" "${CPIDS[1]}" "${CPIDS[2]}" 2>/dev/null || true
COORD_PID=""
[ "$(grep -c '^end prepare' "$HOOKLOG" || true)" -eq 0 ] || fail "a prepare ended before the kill: $(cat "$HOOKLOG")"
release killed
ok "all three coordinators killed (kill -9) while $L (term $T) drains the first fault domain"
wait_for 20 hooks_idle || fail "the prepares did not end: $(cat "$HOOKLOG")"
ok "the first fault domain's prepares ended while no coordinator ran: $(grep -c '^end prepare' "$HOOKLOG")"

VOTERS=3 COORD_WAIT=0 coord_start
coord_i_start 1 --voters 3
coord_i_start 2 --voters 3
new_leader() { local l; l=$(leader 3) && [ "$(cst "$l" | jq .term)" -gt "$T" ] && N=$l; }
wait_for 20 new_leader || fail "no leader after the restart: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, term, may_act}'; done)"
ok "restarted, the three elected $N (term $(cst "$N" | jq .term))"

election_rollout_end "$N"
leader_wait 10 3 || fail "no single leader after the rollout"
N=$LEADER
dup=$("$SC_BIN/schedcoordctl" --state-dir "$(coord_dir "$N")" history --json |
    jq '[.[] | select(.kind == "prepare_ordered") | .data.event_id + "/" + .data.vms[0] + "/" + (.data.attempt | tostring)]
        | group_by(.) | map(select(length > 1)) | length')
[ "$dup" -eq 0 ] || fail "$dup drains ordered twice in $N's decision log"
ok "the rollout went on after every coordinator died: every rule kept, no drain ordered twice"
for p in "${CPIDS[@]}"; do sc_stop coordinator "$p"; done
coord_stop
