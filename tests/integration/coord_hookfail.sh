#!/usr/bin/env bash
# End to end: a failed prepare hook blocks its event's approval, never the cluster (issue 9
# case 6). The event's drain is rolled back at once (the recover hook of every VM it drained),
# its fault domain released, and the drain tried again after --prepare-retry-s:
#  1. vm_4's prepare fails in attempt 1 only: F (FD 1) is rolled back before it starts (alert
#     prepare_failed, attempt 1); N (FD 2), queued behind it, drains after that and is
#     approved; then F is drained again (attempt 2, alert drain_retry) and approved by us;
#  2. vm_4's prepare fails in every attempt (--prepare-attempts 2): after the second rollback
#     G is left to Azure (started at NotBefore, no POST), H (FD 2) drains and is approved
#     meanwhile, and G's VMs get a recover order again after G ended (impacted undrained).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
write_hook 4 0.3 prepare@1
# A retry waits 2 s after the first rollback, 4 s after the second: an event queued behind the
# rolled-back one is admitted in the round that releases the fault domain, well before.
coord_start --prepare-attempts 2 --prepare-retry-s 2
wait_for 20 all_members_seen 6 || fail "members not all seen"

# alerted KIND EVENT VM ATTEMPT: an alert KIND about VM in EVENT, for that drain attempt
alerted() {
    hist ".kind == \"alert\" and .data.alert == \"$1\" and .data.event_id == \"$2\" and .data.member == \"$3\"" |
        jq -r .data.message | grep "attempt $4 of 2" >/dev/null
}
# rolled_back EVENT ATTEMPT: vm_1's and vm_4's recover hooks of that attempt ended
rolled_back() { [ -n "$(hook_at end recover vm_1 "$1" "$2")" ] && [ -n "$(hook_at end recover vm_4 "$1" "$2")" ]; }

# F first in the drain queue (NotBefore in 20 s), N behind it (30 s): both far beyond the
# ~5 s that the path below takes, so that each is approved by us.
F=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":2000,"DurationInSeconds":30}')
N=$(new_event '{"EventType":"Reboot","Resources":["vm_2","vm_5"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 10 alerted prepare_failed "$F" vm_4 1 || fail "no prepare_failed alert for vm_4, attempt 1: $(ctl events)"
wait_for 10 rolled_back "$F" 1 || fail "F not rolled back: $(grep " $F " "$HOOKLOG")"
# (a hook's end line comes just before the coordinator hears of its end)
for vm in vm_1 vm_4; do
    wait_for 5 drain_is "$F" $vm rolled_back || fail "$vm not shown rolled_back: $(ctl events)"
done
[ -z "$(started_how "$F")" ] || fail "F started ($(started_how "$F")) before its retry"
grep -q "hook did not succeed.*vm=vm_4 phase=prepare state=failed.*output=\"output of vm_4's prepare, attempt 1" "$TMP/coord.err" ||
    fail "the coordinator's log lacks vm_4's failed hook output: $(grep 'did not succeed' "$TMP/coord.err")"
[ -n "$(hist ".kind == \"hook_progress\" and .data.vm == \"vm_4\" and .data.state == \"failed\" and (.data.detail | test(\"output of vm_4's prepare\"))")" ] ||
    fail "the history lacks vm_4's failed hook output"
ok "prepare failed on vm_4 (attempt 1): alert, its output in the log and history; vm_1 and vm_4 rolled back, F still Scheduled"

wait_for 20 ev_over "$N" || fail "N did not go through: $(ctl events)"
[ "$(started_how "$N")" = approved ] || fail "N started $(started_how "$N"), not by our approval"
in_order "$(hook_at end recover vm_1 "$F" 1)" "$(hook_at start prepare vm_2 "$N" 1)" &&
    in_order "$(hook_at end recover vm_4 "$F" 1)" "$(hook_at start prepare vm_5 "$N" 1)" ||
    fail "N drained before F's rollback ended: $(cat "$HOOKLOG")"
ok "FD 1 released: N (FD 2) drained after the rollback and approved"

wait_for 10 alerted drain_retry "$F" vm_4 2 || fail "no drain_retry alert for vm_4: $(ctl events)"
alerted drain_retry "$F" vm_1 2 || fail "no drain_retry alert for vm_1: $(ctl events)"
wait_for 20 ev_over "$F" || fail "F did not go through after its retry: $(ctl events)"
[ "$(started_how "$F")" = approved ] || fail "F started $(started_how "$F"), not by our approval"
in_order "$(hook_at end recover vm_5 "$N" 1)" "$(hook_at start prepare vm_4 "$F" 2)" "$(hook_at end prepare vm_4 "$F" 2)" \
    "$(tl_wall ".kind == \"started\" and .event == \"$F\"")" ||
    fail "F's attempt 2 not after N, or not before F started: $(cat "$HOOKLOG")"
[ -n "$(hook_at end prepare vm_1 "$F" 2)" ] || fail "vm_1 not prepared again: $(grep " $F " "$HOOKLOG")"
wait_for 10 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 2 --all-approved
[ "$(hist '.kind == "approval_intent"' | jq -r '.data.event_ids[]' | tr '\n' ' ')" = "$N $F " ] ||
    fail "approval intents: $(hist '.kind == "approval_intent"')"
ok "F drained again (attempt 2) after N, approved by us, one POST each, all recovered"

# Part 2: every attempt fails. G's NotBefore (15 s) is far beyond its two attempts (~4 s).
write_hook 4 0.3 prepare
G=$(new_event '{"EventType":"Reboot","Resources":["vm_1","vm_4"],"NoticeSeconds":1500,"DurationInSeconds":30}')
wait_for 15 alerted prepare_failed "$G" vm_4 2 || fail "no prepare_failed alert for attempt 2: $(ctl events)"
wait_for 10 rolled_back "$G" 2 || fail "G's attempt 2 not rolled back: $(grep " $G " "$HOOKLOG")"
[ -z "$(started_how "$G")" ] || fail "G started ($(started_how "$G")) before its last rollback ended"
alerted drain_retry "$G" vm_4 2 || fail "no drain_retry alert for G"
hist ".kind == \"alert\" and .data.alert == \"prepare_failed\" and .data.event_id == \"$G\" and .data.member == \"vm_4\"" |
    jq -r .data.message | grep "no attempt left" >/dev/null || fail "the last prepare_failed does not say no attempt is left"
ok "G failed twice: both attempts rolled back, no attempt left"

# the fault domain is free while G waits for NotBefore: H (FD 2) drains and is approved
H=$(new_event '{"EventType":"Reboot","Resources":["vm_2","vm_5"],"NoticeSeconds":3000,"DurationInSeconds":30}')
wait_for 15 ev_over "$H" || fail "H did not go through while G waits: $(ctl events)"
[ "$(started_how "$H")" = approved ] || fail "H started $(started_how "$H"), not by our approval"
[ -z "$(started_how "$G")" ] || fail "G started ($(started_how "$G")) before H was over: the test's timing"
ok "H (FD 2) drained and approved while G waits for NotBefore"

wait_for 20 ev_over "$G" || fail "G never started: $(ctl events)"
[ "$(started_how "$G")" = not_before ] || fail "G started $(started_how "$G"), not at NotBefore"
g_end=$(tl_wall ".kind == \"completed\" and .event == \"$G\"")
# recover_after VM: a recover of VM for G was ordered after G completed: a new attempt (3),
# the VM was impacted undrained after its rollback
recover_after() {
    in_order "$g_end" "$(hist ".kind == \"recover_ordered\" and .data.event_id == \"$G\" and .data.vms[0] == \"$1\" and .data.attempt == 3" |
        jq -r '.wall_ms / 1000' | head -1)"
}
wait_for 10 recover_after vm_1 || fail "vm_1 not recovered after G: $(hist ".data.event_id == \"$G\"")"
wait_for 10 recover_after vm_4 || fail "vm_4 not recovered after G: $(hist ".data.event_id == \"$G\"")"
# and the agents ran it: the recover hook after every impact, told no prepare ran in attempt 3
for vm in vm_1 vm_4; do
    wait_for 10 grep -q "^recover $vm $G prepared=0 attempt=3 " "$HOOKENV" ||
        fail "$vm's recover hook did not run after G (prepared=0): $(grep " $G " "$HOOKENV")"
done
wait_for 10 ev_closed "$G" || fail "G not closed: $(ctl events)"
wait_for 10 hooks_idle || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 4
hist '.kind == "approval_intent"' | jq -r '.data.event_ids[]' | grep -x "$G" >/dev/null && fail "G was approved"
ok "G left to Azure (NotBefore), no POST; recovered again after it ended; the cluster went on"
coord_stop
