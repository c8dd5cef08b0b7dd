#!/usr/bin/env bash
# End to end: imds-sim (6 VMs, 3 fault domains, x100 time) + 6 agents + one coordinator. A
# /control/maintenance Reboot rollout completes with exactly one approval POST per event, every
# approval after all prepare hooks of its Resources, no two fault domains' prepare->recover
# windows overlapping, every prepared VM recovered, every event started by our approval.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen: $(ctl status --json | jq -c .members)"
ok "6 members with fault domains, alive"
eq_leader=$(ctl status --json | jq -r '.leader + " " + (.term|tostring)')
[ "$eq_leader" = "vm_0 1" ] || fail "leader/term: $eq_leader"

# 900 simulated s of notice = 9 s; 30 s of impact = 0.3 s; completed 1 s after start.
rollout_checked 3 90
ctl status >"$TMP/status.txt"; grep -q "^vm_3 " "$TMP/status.txt" || fail "status text table"
ctl history >"$TMP/history.txt"; grep -q "approval_answer" "$TMP/history.txt" || fail "history has no approval answer"
ok "rollout: one POST per event, approvals after prepares, FDs serialised, all recovered"
coord_stop
# history works with the daemon down (read-only SQLite).
n=$(ctl history --json | jq '[.[] | select(.kind == "approval_intent")] | length')
[ "$n" -eq 3 ] || fail "history (daemon down): $n approval intents, expected 3"
ok "history read from the store with the coordinator stopped"
