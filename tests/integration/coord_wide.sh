#!/usr/bin/env bash
# End to end with 30 VMs in 3 fault domains and an event in every fault domain at once: the
# coordinator drains one fault domain at a time (the others wait), approves each event once,
# after all its VMs prepared, and recovers every VM.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 30 --fault-domains 3 --time-scale 100 --complete-after 100 --rate-limit 0
POLL=0.5 set_start 30
coord_start
wait_for 40 all_members_seen 30 || fail "members not all seen: $(ctl status --json | jq -c '[.members[] | select(.alive | not) | .name]')"
ok "30 members alive"

# Three events at once, one per fault domain; 30000 simulated s of notice = 300 s each, more
# than the test lasts: all three are ours to approve (--all-approved) however slowly 30 agents
# go through two fault domains before the third. Every prepare waits for the test's release,
# given once it has read the status: the first fault domain is still draining then.
for ((i = 0; i < 30; i++)); do write_hook $i 0.3 none "$(gate release wide)"; done
for fd in 0 1 2; do
    curl -sS -f -d "{\"EventType\":\"Reboot\",\"FaultDomain\":$fd,\"NoticeSeconds\":30000,\"DurationInSeconds\":30}" \
        "$B/control/events" >/dev/null || fail "event for FD $fd not accepted"
done
# While the first fault domain drains, the others wait.
# (one status read for both: all three events known, one drain started, and how many wait.
# Known to the planner: until the coordinator has its own state for an event, status shows the
# store's "pending" for its VMs instead of the planner's "none".)
drain_started() {
    ctl status --json >"$TMP/wide.json" &&
        jq -e '(.events | length) == 3 and ([.events[].drains[] | select(. == "pending")] | length == 0)
            and ([.events[].drains[] | select(. != "none")] | length > 0)' "$TMP/wide.json" >/dev/null
}
wait_for 20 drain_started || fail "no drain started: $(ctl events)"
waiting=$(jq '[.events[] | select([.drains[] | select(. != "none")] | length == 0)] | length' "$TMP/wide.json")
[ "$waiting" -eq 2 ] || fail "expected 2 events waiting while the first drains, got $waiting"
release wide
ok "events in every fault domain: one drains, two wait"
wait_for 100 completed_ge 3 || fail "not all events completed: $(ctl status)"
wait_for 30 hooks_settled || fail "hooks did not settle"
check 3 --events 3 --all-approved
ok "30 VMs: one POST per event, approvals after prepares, FDs serialised, all recovered"
coord_stop
