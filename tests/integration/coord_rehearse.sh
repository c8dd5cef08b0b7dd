#!/usr/bin/env bash
# End to end: a Reboot rehearsal (schedcoordctl rehearse) on a 6-VM, 3-FD set on imds-sim. Every
# VM's real prepare and recover hooks run, told SCHEDCOORD_REHEARSAL=1, fault domain by fault
# domain in domain order (check.py: no two domains' windows overlap); the simulator's timeline
# has no POST at all; the report's durations match the hook log within a poll (the agents poll
# every 0.5 s); the rehearsal is in the history; its verdicts judge each event type; and the
# forecasts have learnt every VM's hooks from it (schedcoordctl plan).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100
set_start 6
webhook_start hook # a rehearsal is not maintenance: nobody is notified of it
coord_start --notify "json:$WEBHOOK/n"
wait_for 20 all_members_seen 6 || fail "members not all seen: $(ctl status --json | jq -c .members)"

# bad input is refused, naming what is wrong (nothing started)
! ctl rehearse --event-type Nap 2>"$TMP/err" || fail "an unknown event type was accepted"
grep -q "one of Reboot, Redeploy, Freeze, Preempt, Terminate" "$TMP/err" || fail "$(cat "$TMP/err")"
! ctl rehearse --vms vm_1,vm_9 2>"$TMP/err" || fail "a stranger was accepted"
grep -q "vm_9 is not a member" "$TMP/err" || fail "$(cat "$TMP/err")"
! ctl rehearse --vms vm_1 --fault-domain 1 2>"$TMP/err" || fail "--vms and --fault-domain together"
! ctl status --recover-after 3 2>"$TMP/err" || fail "a rehearse option given to status"
grep -q "recover-after is an option of rehearse" "$TMP/err" || fail "$(cat "$TMP/err")"
hist_has '.kind == "rehearsal"' && fail "a refused rehearsal left an entry"
ok "bad rehearse requests refused, naming the problem"

ctl rehearse --event-type Reboot --recover-after 1 --json >"$TMP/report.json" 2>"$TMP/rehearse.err" ||
    fail "rehearse: $(cat "$TMP/rehearse.err") $(cat "$TMP/report.json")"
jq -e '.over and (.stopped | not) and (.vms | length) == 6 and ([.vms[] | select(.ok)] | length) == 6
    and ([.fault_domains[].fault_domain] == [0, 1, 2])' "$TMP/report.json" >/dev/null ||
    fail "report: $(cat "$TMP/report.json")"
ok "rehearsal over: 6 VMs prepared and recovered, in 3 fault domains"

# the real hooks ran, each once per VM and phase, told it was a rehearsal
[ "$(grep -c '^start prepare .* rehearsal-1-fd' "$HOOKLOG")" -eq 6 ] &&
    [ "$(grep -c '^start recover .* rehearsal-1-fd' "$HOOKLOG")" -eq 6 ] ||
    fail "hooks: $(cat "$HOOKLOG")"
[ "$(wc -l <"$REHEARSAL_LOG")" -eq 12 ] || fail "SCHEDCOORD_REHEARSAL=1 seen $(wc -l <"$REHEARSAL_LOG") times"
# fault domain by fault domain: no overlap across domains (check.py), and in domain order
check 3 --no-events
p0=$(first_hook start prepare vm_0 rehearsal-1-fd0)
r0=$(awk '$1 == "end" && $2 == "recover" && $4 == "rehearsal-1-fd0" { t = $5 } END { print t }' "$HOOKLOG")
p1=$(first_hook start prepare vm_1 rehearsal-1-fd1)
r1=$(awk '$1 == "end" && $2 == "recover" && $4 == "rehearsal-1-fd1" { t = $5 } END { print t }' "$HOOKLOG")
p2=$(first_hook start prepare vm_2 rehearsal-1-fd2)
in_order "$p0" "$r0" "$p1" "$r1" "$p2" || fail "not fault domain by fault domain: $p0 $r0 $p1 $r1 $p2"
ok "every VM's prepare and recover ran once, told SCHEDCOORD_REHEARSAL=1, FD 0 then 1 then 2"

# never a POST: the approval of a rehearsal's event is simulated
[ "$(tl_count '.kind == "post"')" -eq 0 ] || fail "POSTs: $(jq -c 'select(.kind == "post")' "$TL")"
ok "no POST in the simulator's timeline"
told=$(jq -c 'select(.body.kind != "leader_changed") | .body.kind' "$TMP/hook.jsonl" | sort | uniq -c)
[ -z "$told" ] || fail "a rehearsal was notified as maintenance: $told"
ok "no notification but the leader's: a rehearsal is not maintenance"

# the report's durations are the hook log's, within a poll
for i in 0 1 2 3 4 5; do
    ev="rehearsal-1-fd$((i % 3))"
    for ph in prepare recover; do
        s=$(first_hook start "$ph" "vm_$i" "$ev")
        e=$(first_hook end "$ph" "vm_$i" "$ev")
        r=$(jq -r --arg vm "vm_$i" --arg ph "${ph}_s" '.vms[] | select(.name == $vm) | .[$ph]' "$TMP/report.json")
        python3 -c 'import sys; s, e, r = map(float, sys.argv[1:]); sys.exit(abs((e - s) - r) > 0.5)' \
            "$s" "$e" "$r" || fail "vm_$i $ph: hook log $s..$e, report $r s"
    done
done
ok "reported durations match the hook log within 0.5 s"

# verdicts for every event type against its notice; in the history; the forecasts learnt
jq -e '[.verdicts[] | select(.notice_s > 0 and .needed_s > 0 and (.fits | type) == "boolean")
    | .event_type] == ["Reboot", "Redeploy", "Freeze", "Preempt", "Terminate"]
    and ([.verdicts[] | select(.event_type == "Reboot")][0] | .fits and (.text | test("fits 15 min")))' \
    "$TMP/report.json" >/dev/null || fail "verdicts: $(jq -c .verdicts "$TMP/report.json")"
hist_has '.kind == "rehearsal" and .data.state == "started" and .data.event_type == "Reboot"' &&
    hist_has '.kind == "rehearsal" and .data.state == "finished"' &&
    hist_has '.kind == "event_started" and .data.event_id == "rehearsal-1-fd2" and .data.how == "approved"' ||
    fail "history: $(ctl history | tail -20)"
ctl plan --json >"$TMP/plan.json" || fail "plan"
jq -e '[.history[] | select(.prepare.count == 1 and .recover.count == 1)] | length == 6' \
    "$TMP/plan.json" >/dev/null || fail "plan history: $(jq -c .history "$TMP/plan.json")"
ctl plan | grep "^vm_5 " >/dev/null || fail "plan text: $(ctl plan)"
ok "verdicts per event type; the rehearsal is in the history; every VM's hooks in the forecasts"

# the text report, and a second rehearsal of one fault domain (numbered in turn)
ctl rehearse --fault-domain 2 >"$TMP/report2.txt" 2>/dev/null || fail "rehearse FD 2: $(cat "$TMP/report2.txt")"
grep -q "^Rehearsal 2 (Reboot, fault domain 2): over in" "$TMP/report2.txt" &&
    grep -q "^vm_5 .* prepared and recovered" "$TMP/report2.txt" &&
    grep -q "Reboot: fault domain 2 drains in" "$TMP/report2.txt" || fail "text report: $(cat "$TMP/report2.txt")"
[ "$(tl_count '.kind == "post"')" -eq 0 ] || fail "a POST"
ok "a rehearsal of fault domain 2 alone, its text report"

# a Preempt drains at once whatever else is busy: its rehearsal goes one domain at a time, and
# its VMs stay members (a real Preempt's leave: MEMBER_GONE), recovered instead
ctl rehearse --event-type Preempt --vms vm_1,vm_2 --json >"$TMP/report3.json" 2>/dev/null ||
    fail "rehearse Preempt: $(cat "$TMP/report3.json")"
jq -e '[.vms[] | select(.ok)] | length == 2' "$TMP/report3.json" >/dev/null ||
    fail "report: $(cat "$TMP/report3.json")"
in_order "$(first_hook end recover vm_1 rehearsal-3-fd1)" "$(first_hook start prepare vm_2 rehearsal-3-fd2)" ||
    fail "Preempt rehearsal not one domain at a time: $(grep rehearsal-3 "$HOOKLOG")"
member_is vm_1 healthy && member_is vm_2 healthy || fail "members: $(ctl status --json | jq -c .members)"
! hist_has '.kind == "member" and .data.state == "gone"' || fail "a rehearsal made a member gone"
[ "$(tl_count '.kind == "post"')" -eq 0 ] || fail "a POST"
ok "a Preempt rehearsal: one domain at a time, its VMs recovered, still members"
coord_stop
