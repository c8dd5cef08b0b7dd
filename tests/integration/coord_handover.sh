#!/usr/bin/env bash
# Handover (issue 11): three coordinators, three voters. An event whose Resources hold the
# leader's own VM is not approved by that leader: it hands the lead (TimeoutNow) to a voter
# outside the event, which approves it — one POST, from another VM, after the drain — and the
# one that handed over follows. Checked from outside: the simulator's timeline (who POSTed),
# the hook log (check.py's safety rules) and every coordinator's status.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 3 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 3
VOTERS=3 coord_start
CPIDS=()
for i in 1 2; do
    "$SC_BIN/schedcoord-coordinator" --name "vm_$i" --imds-url "$B/vm_$i" --members "$MEMBERS" \
        --state-dir "$TMP/coord_$i" $(sec_args "vm_$i") --deadline-margin-s 1 \
        >>"$TMP/coord_$i.out" 2>>"$TMP/coord_$i.err" &
    CPIDS+=("$!")
    PIDS+=("$!")
done
dir_of() { [ "$1" = vm_0 ] && echo "$TMP/coord" || echo "$TMP/coord_${1#vm_}"; }
st() { "$SC_BIN/schedcoordctl" --state-dir "$(dir_of "$1")" status --json 2>/dev/null; }
# one leader that may act, followed by both others
leader() {
    local i l n=0 who=""
    for i in 0 1 2; do
        l=$(st "vm_$i" | jq -r 'if .role == "leader" and .may_act then .self else .leader // "" end')
        [ -n "$l" ] || return 1
        [ -z "$who" ] || [ "$who" = "$l" ] || return 1
        who=$l
        n=$((n + 1))
    done
    [ "$n" -eq 3 ] && echo "$who"
}
wait_for 30 leader >/dev/null || fail "no leader: $(for i in 0 1 2; do st "vm_$i" | jq -c '{self, role, leader, term, may_act}'; done)"
L=$(leader)
ok "three coordinators elected $L"

E=$(new_event "{\"EventType\":\"Reboot\",\"Resources\":[\"$L\"],\"NoticeSeconds\":30000,\"DurationInSeconds\":30}")
wait_for 60 ev_over "$E" || fail "$E not over: $(st vm_0 | jq -c '.events')"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
check 3 --events 1 --all-approved
by=$(jq -r --arg e "$E" 'select(.kind == "post" and .status == 200 and (.events | index($e))) | .vm' "$TL")
[ "$(wc -l <<<"$by")" -eq 1 ] && [ "$by" != "$L" ] ||
    fail "$E approved by \"$by\" (expected one POST, not from the leader $L whose VM it reboots)"
grep -q 'msg="handover" to='"$by" "$(dir_of "$L").err" 2>/dev/null || grep -q 'msg="handover" to='"$by" "$TMP/coord.err" ||
    fail "no handover line on $L: $(grep -h handover "$TMP"/coord*.err)"
N=$(leader) || fail "no single leader after the handover"
[ "$N" = "$by" ] || fail "the approver $by does not lead (the leader is $N)"
ok "$L handed the lead to $by before its own VM's Reboot; $by drained and approved it (one POST)"
for p in "${CPIDS[@]}"; do sc_stop coordinator "$p"; done
coord_stop
