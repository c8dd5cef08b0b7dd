#!/usr/bin/env bash
# End to end: event classes that do not wait their fault domain's turn, during a platform
# Reboot rollout (fault domain 0 being drained):
#  - a short Freeze (DurationInSeconds 5, vm_2) is approved at once, without any hook;
#  - a User Reboot of vm_4 (fault domain 1) reaches --user-event-deadline-s (2 s) while fault
#    domain 0 is still out: rule 2 wins, it is not approved undrained then (alert
#    user_deadline_blocked naming fault domain 0, its waiting text says so) but as soon as
#    fault domain 0 is back, long before its NotBefore; vm_4 recovered (its recover order
#    answered) after it ended; the rollout then completes normally.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

DEADLINE=2
sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
# hooks of 2.5 s: FD 0 is out for several seconds, far longer than the bounds below
HOOK_SLEEP=2.5 set_start 6
coord_start --user-event-deadline-s "$DEADLINE"
wait_for 20 all_members_seen 6 || fail "members not all seen"

curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":3000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
wait_for 10 grep -q '^start prepare vm_0 ' "$HOOKLOG" || fail "FD 0 drain did not start"
R0=$(awk '$1 == "start" && $3 == "vm_0" { print $4; exit }' "$HOOKLOG")
Z=$(new_event '{"EventType":"Freeze","Resources":["vm_2"],"NoticeSeconds":3000,"DurationInSeconds":5}')
U=$(new_event '{"EventType":"Reboot","Resources":["vm_4"],"EventSource":"User","NoticeSeconds":3000,"DurationInSeconds":30}')
created() { jq -r "select(.kind == \"created\" and .event == \"$1\") | .wall" "$TL"; }
approved() { jq -r "select(.kind == \"post\" and .status == 200 and (.events | index(\"$1\"))) | .wall" "$TL" | head -1; }

wait_for 5 sh -c "grep -q '\"kind\": *\"started\".*\"$Z\"' '$TL'" || fail "short Freeze not started: $(ctl events)"
python3 -c "import sys; c, a = map(float, sys.argv[1:]); sys.exit(0 if a - c < 3 else 1)" "$(created "$Z")" "$(approved "$Z")" ||
    fail "short Freeze approved $(created "$Z") -> $(approved "$Z"): not at once"
ok "short Freeze approved at once while FD 0 drains"

wait_for $((DEADLINE + 5)) hist_has ".kind == \"alert\" and .data.alert == \"user_deadline_blocked\" and .data.event_id == \"$U\" and (.data.message | contains(\"fault domain(s) 0 busy\"))" ||
    fail "no user_deadline_blocked alert naming fault domain 0: $(hist '.kind == "alert"')"
ctl events | grep "past its user deadline" >/dev/null || fail "waiting text does not say why: $(ctl events)"
ok "User Reboot past its ${DEADLINE} s deadline while FD 0 is out: held, alert names FD 0"

# its NotBefore is 30 s away: started by our approval once FD 0 is back, not by Azure
wait_for 25 sh -c "grep -q '\"kind\": *\"started\".*\"$U\"' '$TL'" || fail "User event not started: $(ctl events)"
u_app=$(approved "$U")
[ -n "$u_app" ] || fail "User event started without our approval: $(jq -c "select(.event == \"$U\")" "$TL")"
r0_back=$(awk -v e="$R0" '$1 == "end" && $2 == "recover" && $4 == e { print $5 }' "$HOOKLOG" | sort -n | tail -1)
[ "$(awk -v e="$R0" '$1 == "end" && $2 == "recover" && $4 == e' "$HOOKLOG" | wc -l)" -eq 2 ] &&
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$r0_back" "$u_app" ||
    fail "User event approved at $u_app while FD 0 was out (back at ${r0_back:-never})"
ok "User Reboot approved once FD 0 was back"

wait_for 60 completed_ge 5 || fail "not all events completed: $(ctl events)"
wait_for 10 hist_has ".kind == \"hook_progress\" and .data.event_id == \"$U\" and .data.vm == \"vm_4\" and .data.phase == \"recover\"" ||
    fail "vm_4 not recovered after the User event"
wait_for 20 hooks_settled || fail "hooks did not settle"
check 3 --events 5 --all-approved --user-deadline "$DEADLINE"
# "at once" is "not behind FD 0": approved before FD 0 was back
r0_end=$(awk -v e="$R0" '$1 == "end" && $2 == "recover" && $4 == e { print $5 }' "$HOOKLOG" | sort -n | tail -1)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$(approved "$Z")" "$r0_end" ||
    fail "short Freeze approved at $(approved "$Z"), after FD 0 was back ($r0_end)"
ok "rollout completed; Freeze without hooks, User event recovered; one POST each"
coord_stop
