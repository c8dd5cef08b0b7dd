#!/usr/bin/env bash
# Every coordinator dies at once (issue 11): three coordinators, three voters, six VMs in three
# fault domains, a Reboot rollout whose prepares end only when the test says. Once the first
# fault domain's two drains are "preparing" in the leader's state (a new leader then has no
# order of theirs to send again, only their results to learn), all three coordinators are
# killed together (one kill -9). The two prepares end while no coordinator runs. The three are
# started again one at a time, each while the others that run are stopped (SIGSTOP), so that
# none can be elected (two of the three voters are needed) before every one of them has heard
# both results from the agents, which re-send them when they reconnect: results that reach only
# followers, which decide nothing. Then all three run, and the leader elected next must ask
# again for both hooks under way, learn how they ended and approve the event. The rollout ends
# with every rule kept, checked from outside: one approval
# POST per event (none approved twice), approval only after every VM of the event was drained,
# one fault domain at a time, every drained VM recovered (check.py over the simulator's
# timeline and the hook log), and never two coordinators that may act at once (one_leader.py,
# the killed ones' acting ending at the kill). The decision log orders no drain twice. Before
# a new leader asked, it waited for those drains until NotBefore.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

HOOK_SLEEP=0.3 election_rollout "$(gate release killed)"
preparing() { [ "$(cst "$L" | jq -c '[.events[].drains[]]')" = '["preparing","preparing"]' ]; }
wait_for 20 preparing || fail "the first drains are not preparing: $(cst "$L" | jq -c '[.events[].drains]')"
E=$(cst "$L" | jq -r '.events[0].EventId')
read -r -a V <<<"$(cst "$L" | jq -r '.events[0].drains | keys | join(" ")')"
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

restarted=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
# heard_at VM V: when VM's coordinator, restarted, first logged V's prepare result (empty: never)
heard_at() {
    awk -v r="$restarted" -v e="$E" -v v="$2" '$1 >= r && /msg="hook progress"/ &&
        index($0, "event=" e " vm=" v " phase=prepare state=done") { print $1; exit }' "$(coord_err "$1")"
}
# heard I: vm_I's coordinator, restarted, heard both results
heard() {
    local v
    for v in "${V[@]}"; do [ -n "$(heard_at "vm_$1" "$v")" ] || return 1; done
}
VOTERS=3 COORD_WAIT=0 coord_start
wait_for 20 heard 0 || fail "vm_0, restarted alone, did not hear the results: $(tail -5 "$TMP/coord.err")"
kill -STOP "$COORD_PID"
coord_i_start 1 --voters 3
wait_for 20 heard 1 || fail "vm_1, restarted alone, did not hear the results: $(tail -5 "$TMP/coord_1.err")"
kill -STOP "${CPIDS[1]}"
coord_i_start 2 --voters 3
wait_for 20 heard 2 || fail "vm_2, restarted alone, did not hear the results: $(tail -5 "$TMP/coord_2.err")"
kill -CONT "$COORD_PID" "${CPIDS[1]}"
ok "restarted one at a time, each alone: all three heard both results while none could lead"
new_leader() { local l; l=$(leader 3) && [ "$(cst "$l" | jq .term)" -gt "$T" ] && N=$l; }
wait_for 30 new_leader || fail "no leader after the restart: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, term, may_act}'; done)"
ok "restarted, the three elected $N (term $(cst "$N" | jq .term))"
# the path: the results reached the first leader F after the restart while it followed (before
# it led), and F, leading, asked again (it may hand the lead over next, for its own VM's event)
read -r won F < <(for i in 0 1 2; do
    awk -v r="$restarted" -v n="vm_$i" '$1 >= r && /msg="role" role=leader/ { print $1, n; exit }' "$(coord_err "vm_$i")"
done | sort | head -1)
[ -n "${F:-}" ] || fail "no coordinator logged its lead after the restart"
for v in "${V[@]}"; do
    at=$(heard_at "$F" "$v")
    [ -n "$at" ] && [[ "$at" < "$won" ]] ||
        fail "$v's result did not reach $F while it followed (heard ${at:-never}, led at $won): the path is not the one meant"
    asked() { grep -q "msg=\"hook under way: asked again\" event=$E vm=$v" "$(coord_err "$F")"; }
    wait_for 10 asked || fail "$F, leading, did not ask again about $v's prepare"
done
wait_for 30 completed_ge 1 ||
    fail "the first fault domain's event never completed: $(cst "$N" | jq -c '[.events[] | {EventId, drains, waiting_for}]')"
ok "the results reached only followers; $F, leading, asked again for ${V[*]} and the event completed"

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
