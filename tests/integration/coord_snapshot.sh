#!/usr/bin/env bash
# Compaction and snapshots (issue 11): a voter too far behind gets the leader's snapshot.
# Three coordinators (three voters) save a snapshot every 20 entries and keep 5 entries behind
# it (--log-keep), so their logs are compacted soon. A follower's coordinator V is killed
# (kill -9) before a rollout; when it comes back, the entries it is owed are gone from every
# log: the leader (vm_0, the preferred member, which has the lead back by then) sends it its
# snapshot in 1 KiB chunks (--snapshot-chunk: many chunks, each acknowledged), it installs it
# and follows the log from there, its status and history telling the leader's story. The other
# follower W loses its disk (state directory wiped) and gets the snapshot too. Then vm_0 is
# killed: V and W, both started from a snapshot, elect one of them, which takes a second rollout
# through. Every safety rule is checked from outside (check.py over the simulator's timeline
# and the hook log) and one coordinator acted at a time (one_leader.py).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

SNAP=(--snapshot-every 20 --log-keep 5 --snapshot-chunk 1024)
sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
HOOK_SLEEP=0.3 set_start 6
VOTERS=3 coord_start "${SNAP[@]}"
coords_start 3 --voters 3 "${SNAP[@]}"
leader_wait 30 3 || fail "no leader: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, term}'; done)"
L=$LEADER
# the follower killed: the last member that does not lead (vm_1 or vm_2: never vm_0, which
# the lead goes back to); the third loses its disk later
for i in 2 1; do [ "vm_$i" = "$L" ] || { V=vm_$i && break; }; done
for i in 1 2; do [ "vm_$i" = "$V" ] || W=vm_$i; done
kill_coord() { # kill_coord VM: kill -9 of VM's coordinator, written down for one_leader
    local p
    p=$(coord_pid "$1")
    kill -9 "$p"
    echo "$1 $(date +%s.%N)" >>"$TMP/killed"
    wait "$p" 2>/dev/null || true
}
restart_coord() { # restart_coord VM
    if [ "$1" = vm_0 ]; then VOTERS=3 COORD_WAIT=0 coord_start "${SNAP[@]}"; else coord_i_start "${1#vm_}" --voters 3 "${SNAP[@]}"; fi
}
kill_coord "$V"
ok "$L leads; $V's coordinator killed before the rollout"

curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
wait_for 120 completed_ge 3 || fail "first rollout not complete: $(cst "$L" | jq -c '.events')"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
base() { cst "$1" | jq .log_base_index; }
[ "$(base vm_0)" -gt 20 ] && [ "$(base "$W")" -gt 20 ] ||
    fail "logs not compacted: vm_0's base $(base vm_0), $W's $(base "$W") (last $(cst vm_0 | jq .last_index))"
ok "rollout 1 with $V down: logs compacted (vm_0's base $(base vm_0) of $(cst vm_0 | jq .last_index))"
# nothing in flight: the lead goes (back) to the preferred member, vm_0, by transfer
L=vm_0
vm_0_leads() { [ "$(leader 3)" = vm_0 ]; }
wait_for 30 vm_0_leads || fail "vm_0 does not lead: $(leader 3)"

# events as status tells them: the store's tables and the state, on any member alike
story() { cst "$1" | jq -c '[.events[] | {EventId, status, approved_by, started_how, ended_how, drains, approval}] | sort_by(.EventId)'; }
# the history both hold (the entries after VM's base) is the same, entry for entry
hist_of() { "$SC_BIN/schedcoordctl" --state-dir "$(coord_dir "$1")" history --json | jq -c --argjson b "$2" '[.[] | select(.index > $b) | [.index, .term, .kind, .data]]'; }
caught_up() { # caught_up VM: VM applied what the leader committed, and tells the same story
    local s
    s=$(cst "$1") || return 1
    [ "$(jq .applied_index <<<"$s")" -ge "$(cst "$L" | jq .commit_index)" ] &&
        [ "$(story "$1")" = "$(story "$L")" ] &&
        [ "$(hist_of "$1" "$(jq .log_base_index <<<"$s")")" = "$(hist_of "$L" "$(jq .log_base_index <<<"$s")")" ]
}
installed() { # installed VM: its log says a snapshot was installed, with the index it includes
    SI=$(sed -n 's/.*msg="snapshot installed: the log goes on from it" index=\([0-9]*\).*/\1/p' "$(coord_err "$1")" | tail -1)
    [ -n "$SI" ]
}
restart_coord "$V"
wait_for 30 installed "$V" || fail "$V did not install a snapshot: $(grep -E 'snapshot|refused|not stored' "$(coord_err "$V")" | tail -5)"
grep -q "msg=\"snapshot sent: the entries this member is owed were compacted\" to=$V " "$(coord_err vm_0)" ||
    fail "vm_0 did not say it sent $V its snapshot"
bytes=$(sed -n 's/.*msg="snapshot installed: the log goes on from it" .* bytes=\([0-9]*\).*/\1/p' "$(coord_err "$V")" | tail -1)
[ "$bytes" -gt 4096 ] || fail "a snapshot of $bytes bytes: not several 1 KiB chunks"
wait_for 20 caught_up "$V" || fail "$V is not caught up: $(cst "$V" | jq -c '{applied_index, log_base_index}') vs $(cst "$L" | jq -c '{commit_index}'); $(diff <(story "$V") <(story "$L"))"
[ "$(base "$V")" -ge "$SI" ] || fail "$V's log base $(base "$V") is before the snapshot's $SI"
ok "$V, back, installed $L's snapshot (index $SI, $bytes bytes in 1 KiB chunks) and tells the same story"

kill_coord "$W"
rm -rf "$(coord_dir "$W")"
restart_coord "$W"
wait_for 30 installed "$W" || fail "$W (disk lost) did not install a snapshot: $(grep -E 'snapshot|refused' "$(coord_err "$W")" | tail -5)"
wait_for 20 caught_up "$W" || fail "$W is not caught up: $(diff <(story "$W") <(story "$L"))"
ok "$W, its disk lost, installed the snapshot (index $SI) and tells the same story"

vm_0_leads || fail "vm_0 does not lead any more: $(leader 3)"
T=$(cst "$L" | jq .term)
kill_coord "$L"
new_leader() {
    local s
    s=$(cst "$V" | jq -r --argjson t "$T" 'select(.term > $t) | if .role == "leader" and .may_act then .self elif .role == "voter" then .leader // empty else empty end') &&
        [ -n "$s" ] && [ "$s" != "$L" ] && N=$s
}
wait_for 30 new_leader || fail "no new leader after $L's kill: $(cst "$V" | jq -c '{role, leader, term}')"
[ "$N" = "$V" ] || [ "$N" = "$W" ] || fail "$N leads"
ok "$L killed: $N leads (term $(cst "$N" | jq .term)), started from a snapshot"
curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "second maintenance not accepted"
wait_for 120 completed_ge 6 || fail "second rollout not complete: $(cst "$N" | jq -c '.events')"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 6 --all-approved
one_leader
ok "rollout 2 under $N: one POST per event, drains before approval, one fault domain at a time, all recovered, one leader at a time"
for p in "$COORD_PID" "${CPIDS[1]:-}" "${CPIDS[2]:-}"; do
    [ -z "$p" ] || ! kill -0 "$p" 2>/dev/null || sc_stop coordinator "$p"
done
