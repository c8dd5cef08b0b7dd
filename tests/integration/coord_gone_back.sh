#!/usr/bin/env bash
# End to end (issue 9, case 8): "gone" is not forever. vm_5 is Preempted: drained, approved,
# deleted, and its member is gone. The VM is re-created under the same name (a Spot VM
# restarted, a VM re-created) and a new agent runs on it (fresh state, a new boot id): the
# member is back, and a Reboot of vm_5 is drained on it and approved once. (Before the fix
# vm_5 stayed gone and was never drained again.) The Preempted VM's old agent keeps running
# until the re-creation, its IMDS silent (--imds-stale, as in coord_evict.sh); greeting the
# coordinator again after a restart of it, it does not bring the member back.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
coord_start --imds-stale 3
wait_for 20 all_members_seen 6 || fail "members not all seen"

# An impact of 0 s: the VM may be re-created as soon as the Preempt started.
P=$(new_event '{"EventType":"Preempt","Resources":["vm_5"],"NoticeSeconds":1500,"DurationInSeconds":0}')
wait_for 30 ev_over "$P" || fail "the Preempt did not complete: $(ctl events)"
wait_for 15 member_is vm_5 gone || fail "vm_5 not gone: $(ctl status --json | jq -c '[.members[] | {name, state}]')"
grep -q "^end prepare vm_5 $P " "$HOOKLOG" || fail "vm_5 not drained for the Preempt"
ok "vm_5 Preempted: drained, approved, member gone"

# A restart while vm_5 is gone: its old agent greets the new coordinator (hello, its first
# message) with the boot id it went with, which does not bring it back.
coord_stop
coord_start --imds-stale 3
vm5_alive() { [ "$(ctl status --json | jq '.members[] | select(.name == "vm_5") | .alive')" = true ]; }
wait_for 10 vm5_alive || fail "vm_5's old agent not heard after the restart"
member_is vm_5 gone || fail "vm_5's old agent brought it back: $(hist '.kind == "member" and .data.name == "vm_5"')"
ok "after a restart vm_5 is still gone (its old agent)"

sc_stop "vm_5's agent" "${AGENT_PIDS[5]}" "$TMP/agent_5.err"
curl -sS -f -X POST "$B/control/vms/vm_5/recreate" >/dev/null || fail "vm_5 not re-created"
agent_start 5 "$TMP/agent_5.new"
wait_for 15 member_is vm_5 healthy ||
    fail "vm_5 not back: $(ctl status --json | jq -c '.members[] | select(.name == "vm_5")')"
hist_has '.kind == "member" and .data.name == "vm_5" and .data.state == "healthy"' ||
    fail "no decision for vm_5's return: $(hist '.kind == "member"')"
ok "vm_5 re-created with a new agent: member back (healthy)"

R=$(new_event '{"EventType":"Reboot","Resources":["vm_5"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 15 grep -q "^end prepare vm_5 $R " "$HOOKLOG" || fail "vm_5 never drained for the Reboot: $(ctl events)"
wait_for 30 ev_over "$R" || fail "the Reboot did not complete: $(ctl events)"
wait_for 20 grep -q "^end recover vm_5 $R " "$HOOKLOG" || fail "vm_5 not recovered after the Reboot"
check 3 --events 2 --all-approved
wait_for 5 member_is vm_5 healthy || fail "vm_5 not healthy after the Reboot"
ok "a Reboot of the re-created vm_5: drained, approved once, recovered"
coord_stop
