#!/usr/bin/env bash
# Handover (issue 11): three coordinators, three voters. An event whose Resources hold the
# leader's own VM is not approved by that leader: it hands the lead (TimeoutNow) to a voter
# outside the event, which approves it — one POST, from another VM, after the drain — and the
# one that handed over follows. Checked from outside: the simulator's timeline (who POSTed),
# the hook log (check.py's safety rules), every coordinator's status and "may act" log lines
# (never two at once).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 3 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 3
VOTERS=3 coord_start
coords_start 3
leader_wait 30 3 || fail "no leader: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, term, may_act}'; done)"
L=$LEADER
ok "three coordinators elected $L"

E=$(new_event "{\"EventType\":\"Reboot\",\"Resources\":[\"$L\"],\"NoticeSeconds\":30000,\"DurationInSeconds\":30}")
wait_for 60 ev_over "$E" || fail "$E not over: $(cst vm_0 | jq -c '.events')"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 1 --all-approved
by=$(jq -r --arg e "$E" 'select(.kind == "post" and .status == 200 and (.events | index($e))) | .vm' "$TL")
[ "$(wc -l <<<"$by")" -eq 1 ] && [ "$by" != "$L" ] ||
    fail "$E approved by \"$by\" (expected one POST, not from the leader $L whose VM it reboots)"
from=$(grep -l "msg=\"handover\" to=$by .*$E" "$TMP"/coord*.err) ||
    fail "no handover to $by for $E: $(grep -h handover "$TMP"/coord*.err)"
[ "$from" = "$(coord_err "$L")" ] || fail "the handover came from $from, not from $L"
leader_wait 10 3 || fail "no single leader after the handover"
N=$LEADER
[ "$N" = "$by" ] || fail "the approver $by does not lead (the leader is $N)"
one_leader
ok "$L handed the lead to $by before its own VM's Reboot; $by drained and approved it (one POST)"
for p in "${CPIDS[@]}"; do sc_stop coordinator "$p"; done
coord_stop
