#!/usr/bin/env bash
# The leader's own VM rebooted by the event it coordinates (issue 11): three coordinators,
# three voters, six VMs in three fault domains, a Reboot rollout whose hooks take 1 s, led by
# vm_0, the preferred member (where the lead goes back to when nothing is in flight: the usual
# leader). The platform (imds-sim --on-impact) kills vm_0's agent and coordinator (kill -9)
# when vm_0's impact begins, as the reboot would. vm_0 hands the lead over before its own VM's
# event E is approved: E is approved by the member it handed the lead to. The test starts the two daemons again, as the booted VM would, after the
# impact and once the coordinators saw E end: the VM is down longer than --dead-after, as a
# real reboot is (a VM back sooner, its event already gone from IMDS, holds that event for
# confirm_ms, 60 s, with its fresh document's PENDING vote: docs/planner.md, "Disappears").
# Its coordinator catches up with the new leader (following it, or leading already when that
# leader's own VM drains next and it hands over to vm_0), its agent recovers it (the second
# fault domain's prepare waits for that). vm_0, the first voter, then leads again (at the next
# handover that finds it caught up, or by the transfer back to the preferred member), and must
# take up the log as it is: E, closed, is never seen anew nor drained again (its decision
# log). The rollout ends with every rule kept, checked from outside: one approval POST per
# event, approval only after every VM of the event was drained, one fault domain at a time,
# every drained VM recovered (check.py over the simulator's timeline and the hook log), never
# two coordinators that may act at once (one_leader.py, the killed one's acting ending at its
# kill).
# vm_0's coordinator, restarted from a store where E was still being drained, rebuilds its
# event registry from that store; the entries it then applies as a follower (E started, ended,
# closed) do not reach the registry, so leading again it must forget what the state closed
# (sc_coord_exec_sync_registry). Before it did, it took E up as a new event, ordered vm_0's
# and vm_3's prepares again and held fault domain 0 busy for 60 s.
# The lead may come back to vm_0 through a member that followed while the event before was
# closed and led at once (vm_0 not caught up when vm_2 handed over): that member held the
# closed event's timers, "in flight" for good, and never gave the lead back (CI, stop 27).
# The close, applied, takes them (test_coord_pipeline closed_event_timers_go_with_its_close).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

SIM_ARGS=(--on-impact "$(platform_cmd)")
HOOK_SLEEP=1 ROLLOUT_LEADER=vm_0 election_rollout
# (rewritten before the second fault domain's event exists: its prepares run it)
write_hook 1 1 none "$(gate release back)"
vm_mortal 0
ok "vm_0 leads (term $T); its VM's agent and coordinator die when its impact begins"

wait_for 40 vm_killed 0 || fail "vm_0's VM never impacted: $(cst vm_0 | jq -c .events)"
vm_reap 0
E=$(awk '$2 == "vm_0" { print $4; exit }' "$TMP/platform.log")
by=$(jq -r --arg e "$E" 'select(.kind == "post" and .status == 200 and (.events | index($e))) | .vm' "$TL")
[ "$(wc -l <<<"$by")" -eq 1 ] && [ "$by" != vm_0 ] || fail "$E approved by \"$by\" (expected one POST, not from vm_0)"
# vm_0 led until its own VM's event and handed the lead over for it (E could not start
# otherwise: its notice outlasts the test, and the leader approves its own VM's event only
# when no voter outside it is caught up, which would have made the POST vm_0's)
h=$(grep -o "msg=\"handover\" to=[^ ]* .*$E" "$TMP/coord.err" | head -1 | sed 's/^msg="handover" to=\([^ ]*\).*/\1/' || true)
[ -n "$h" ] && [ "$h" = "$by" ] ||
    fail "vm_0 did not hand the lead over to $by for $E: $(grep -E 'msg="(handover|role|may act)"' "$TMP/coord.err" | tail -4)"
ok "vm_0's VM rebooted by $E: vm_0 handed the lead over to $h, which approved it"

wait_for 20 impact_over vm_0 || fail "vm_0's impact did not end"
ended() { local n; n=$(leader 3) && cst "$n" | jq -e --arg e "$E" '[.events[] | select(.EventId == $e and .ended_ms == null)] == []' >/dev/null; }
wait_for 30 ended || fail "$E never ended for the coordinators: $(cst "$(leader 3)" | jq -c --arg e "$E" '.events[] | select(.EventId == $e)')"
N=$(leader 3) || fail "no leader while vm_0 is down"
c=$(cst "$N" | jq .commit_index) && [ -n "$c" ] || fail "no commit index from $N"
since=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
agent_start 0
VOTERS=3 COORD_WAIT=0 coord_start
# vm_0 back follows a leader; or it leads already: once vm_0 is recovered, the second fault
# domain's prepares are ordered, and a leader whose own VM is in it hands the lead over at
# once to the first caught-up voter outside it, which may be vm_0 (docs/design.md, "Handover":
# a transfer goes only to a voter that has the whole log)
back() {
    local r
    r=$(cst vm_0 | jq -r '.role + " " + (.leader // "")')
    case "$r" in
    "voter vm_1" | "voter vm_2") return 0 ;;
    "leader vm_0") awk -v t="$since" '$1 >= t && /msg="handover" to=vm_0 /' "$TMP"/coord*.err | grep -q . ;;
    *) return 1 ;;
    esac
}
wait_for 20 back || fail "vm_0 back neither follows nor leads by a handover: $(for j in 0 1 2; do cst "vm_$j" | jq -c '{self, role, leader, term, may_act}'; done)"
caught_up() { [ "$(cst vm_0 | jq .commit_index)" -ge "$c" ]; }
wait_for 15 caught_up || fail "vm_0's commit index $(cst vm_0 | jq .commit_index) does not reach $N's $c"
wait_for 20 grep -q "^end recover vm_0 $E " "$HOOKLOG" || fail "vm_0 not recovered after its reboot: $(grep " vm_0 " "$HOOKLOG")"
ok "vm_0's daemons back after the impact: its coordinator caught up with $N ($c), its agent recovered it"
release back

# vm_0, the first voter, leads again: at the next handover that finds it caught up, or by the
# transfer back to the preferred member once nothing is in flight
leads_again() { [ "$(leader 3)" = vm_0 ]; }
wait_for 60 leads_again || fail "vm_0 does not lead again: $(grep -h 'msg="handover"' "$TMP"/coord*.err)"
ok "vm_0 leads again (term $(cst vm_0 | jq .term))"
# (vm_0's own store: history reads it)
again=$(hist "(.kind == \"event_seen\" or (.kind | test(\"ordered\"))) and (.data.event.EventId == \"$E\" or .data.event_id == \"$E\")
    and .index > $(hist ".kind == \"event_closed\" and .data.event_id == \"$E\"" | jq -s '.[0].index // 1e9')" |
    jq -c '[.index, .term, .kind, .reason]')
[ -z "$again" ] || fail "vm_0, leading again, took up $E after it was closed: $again"
ok "vm_0, leading again, leaves $E, closed, alone"

election_rollout_end vm_0
ok "the rollout went on: every rule kept, one coordinator acting at a time"
for p in "${CPIDS[@]}"; do sc_stop coordinator "$p"; done
coord_stop
