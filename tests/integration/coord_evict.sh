#!/usr/bin/env bash
# End to end: Preempt and Terminate jump the queue. While fault domain 1 is being drained for a
# Reboot (and a Reboot of fault domain 2 waits its turn), a Preempt of vm_5 (FD 2) and a
# Terminate of vm_3 (FD 0, its NotBefore later than the waiting Reboot's) are drained at once,
# each approved once after its VM prepared; when they end their members are gone (status),
# never recovered; the queued Reboot then proceeds normally. The evicted VMs' agents keep
# running (in Azure they die with their VM) and their IMDS never answers again: the coordinator
# must not wait for their stale documents (--imds-stale).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
HOOK_SLEEP=1 set_start 6
coord_start --imds-stale 3
wait_for 20 all_members_seen 6 || fail "members not all seen"

# 3000 simulated s of notice = 30 s; 30 s of impact = 0.3 s; completed 1 s after start.
A=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 10 grep -q "^start prepare vm_1 $A " "$HOOKLOG" || fail "FD 1 drain did not start"
Q=$(new_event '{"EventType":"Reboot","Resources":["vm_2"],"NoticeSeconds":3000,"DurationInSeconds":30}')
P=$(new_event '{"EventType":"Preempt","Resources":["vm_5"],"NoticeSeconds":1500,"DurationInSeconds":30}')
T=$(new_event '{"EventType":"Terminate","Resources":["vm_3"],"NoticeSeconds":3500,"DurationInSeconds":30}')
wait_for 10 sh -c "grep -q '^start prepare vm_5 $P ' '$HOOKLOG' && grep -q '^start prepare vm_3 $T ' '$HOOKLOG'" ||
    fail "Preempt/Terminate not drained: $(ctl events)"
# Drained at once: while FD 1 is still out (its recover has not ended), and before the
# Reboot queued in FD 2.
[ -z "$(first_hook end recover vm_1 "$A")" ] || fail "FD 1 was already back: nothing was jumped"
[ -z "$(first_hook start prepare vm_2 "$Q")" ] || fail "the queued Reboot drained before the evictions"
ok "Preempt and Terminate drained at once while FD 1 is drained and FD 2 queued"

wait_for 40 ev_over "$A" "$Q" "$P" "$T" || fail "not all events completed: $(ctl events)"
evicted_gone() { member_is vm_3 gone && member_is vm_5 gone; }
wait_for 10 evicted_gone ||
    fail "evicted members not gone: $(ctl status --json | jq -c '[.members[] | {name, state}]')"
wait_for 20 sh -c "[ \$(grep -c '^end recover' '$HOOKLOG') -eq 3 ]" || fail "recovers: $(grep recover "$HOOKLOG")"
for vm in vm_3 vm_5; do
    grep -q "IMDS silent.*member=$vm " "$TMP/coord.err" || fail "$vm: deleted, yet never declared blind"
done
sleep 1 # a late (wrong) recover of an evicted VM would show now
check 3 --events 4 --all-approved
[ "$(hist '.kind == "member" and .data.state == "gone"' | jq -r .data.name | sort | tr '\n' ' ')" = "vm_3 vm_5 " ] ||
    fail "decision log: members gone: $(hist '.kind == "member"')"
# The others are healthy again, vm_2's Reboot went through after the evictions.
st=$(ctl status --json | jq -r '[.members[] | select(.state != "healthy") | .name] | join(" ")')
[ "$st" = "vm_3 vm_5" ] || fail "members not healthy: $st"
[ "$(first_hook start prepare vm_2 "$Q")" != "" ] || fail "the queued Reboot was never drained"
ok "evictions approved once after their drain, members gone and never recovered; the rest went on"
coord_stop
