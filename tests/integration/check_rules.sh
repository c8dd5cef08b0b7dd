#!/usr/bin/env bash
# check.py, the suite's judge of the safety rules, judged on made-up histories (no daemons):
# rule 1's allowance for a POST that reached IMDS after the platform had started the event at
# NotBefore (a drain that ended right then) holds for exactly that, and no more: a POST
# before the start, or two POSTs, are still violations. Rule 2's allowance for a VM the
# platform deleted before the approval (nemesis seed 5: a Reboot of a fault domain still
# naming a VM a Preempt had deleted) holds for that, and not for a VM deleted after it.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"

E=f14cd2f8-ea03-4701-9666-4244a4cdb7a5
# history TIME_OF_POST... : a Preempt of vm_4 created at 100, drained 101..102, started by the
# platform at NotBefore (103), deleted, completed at 106; one successful POST per TIME given
history() {
    local t
    {
        echo '{"wall":100,"kind":"created","event":"'$E'","event_type":"Preempt","resources":["vm_4"],"duration":-1}'
        echo '{"wall":103,"kind":"started","event":"'$E'","how":"not_before","event_type":"Preempt"}'
        echo '{"wall":103,"kind":"impact_start","vm":"vm_4","event":"'$E'","deleted":true}'
        for t in "$@"; do echo '{"wall":'"$t"',"kind":"post","vm":"vm_0","events":["'$E'"],"status":200}'; done
        echo '{"wall":106,"kind":"impact_end","vm":"vm_4","event":"'$E'"}'
        echo '{"wall":106,"kind":"completed","event":"'$E'"}'
    } >"$TMP/tl.jsonl"
    printf 'start prepare vm_4 %s 101 1\nend prepare vm_4 %s 102 1\n' "$E" "$E" >"$TMP/hooks.log"
    echo '{"events":[{"EventId":"'$E'","EventType":"Preempt","EventStatus":"Completed","Resources":["vm_4"],"DurationInSeconds":-1}],"vms":[{"name":"vm_4","deleted":true}]}' >"$TMP/state.json"
}
judge() { python3 "$SC_SRC/tests/integration/coord/check.py" --timeline "$TMP/tl.jsonl" --hooks "$TMP/hooks.log" --state "$TMP/state.json" --fault-domains 3; }

history
judge >"$TMP/out" || fail "no POST at all, started at NotBefore: $(cat "$TMP/out")"
history 103.05
judge >"$TMP/out" || fail "one POST after the platform's start: $(cat "$TMP/out")"
ok "a Preempt started at NotBefore: no POST, or one that came after the start, is fine"
history 102.5
! judge >"$TMP/out" || fail "a POST before the start of an event started at NotBefore passed"
grep -q "1 approval POSTs, expected exactly 0" "$TMP/out" || fail "not said: $(cat "$TMP/out")"
history 103.05 103.5
! judge >"$TMP/out" || fail "two POSTs passed"
grep -q "2 approval POSTs, expected exactly 0" "$TMP/out" || fail "not said: $(cat "$TMP/out")"
ok "a POST before that start, or two after it, are violations"

R=6a1f0c3e-2b7d-4c59-9e8a-1d2c3b4a5f60
# deleted_history DELETED_AT: a Reboot of vm_1 and vm_7 (FD 1) created at 100; vm_1 prepared
# 101..102; vm_7 deleted by a Preempt (E) at DELETED_AT; the Reboot approved at 105, impacts
# 105..106, completed at 107, vm_1 recovered 107..108
deleted_history() {
    {
        echo '{"wall":100,"kind":"created","event":"'$R'","event_type":"Reboot","resources":["vm_1","vm_7"],"duration":30}'
        echo '{"wall":100.5,"kind":"created","event":"'$E'","event_type":"Preempt","resources":["vm_7"],"duration":-1}'
        echo '{"wall":'"$1"',"kind":"started","event":"'$E'","how":"not_before","event_type":"Preempt"}'
        echo '{"wall":'"$1"',"kind":"impact_start","vm":"vm_7","event":"'$E'","deleted":true}'
        echo '{"wall":105,"kind":"post","vm":"vm_0","events":["'$R'"],"status":200}'
        echo '{"wall":105,"kind":"started","event":"'$R'","how":"approved","event_type":"Reboot"}'
        echo '{"wall":105,"kind":"impact_start","vm":"vm_1","event":"'$R'"}'
        echo '{"wall":106,"kind":"impact_end","vm":"vm_1","event":"'$R'"}'
        echo '{"wall":107,"kind":"completed","event":"'$R'"}'
        echo '{"wall":107,"kind":"completed","event":"'$E'"}'
    } | sort -s -t: -k2,2n >"$TMP/tl.jsonl"
    {
        printf 'start prepare vm_7 %s 100.6 1\nend prepare vm_7 %s 100.7 1\n' "$E" "$E"
        printf 'start prepare vm_1 %s 101 1\nend prepare vm_1 %s 102 1\n' "$R" "$R"
        printf 'start recover vm_1 %s 107 1\nend recover vm_1 %s 108 1\n' "$R" "$R"
    } >"$TMP/hooks.log"
    echo '{"events":[{"EventId":"'$R'","EventType":"Reboot","EventStatus":"Completed","Resources":["vm_1","vm_7"],"DurationInSeconds":30},{"EventId":"'$E'","EventType":"Preempt","EventStatus":"Completed","Resources":["vm_7"],"DurationInSeconds":-1}],"vms":[{"name":"vm_7","deleted":true}]}' >"$TMP/state.json"
}
deleted_history 103
judge >"$TMP/out" || fail "a VM deleted before the approval held it back: $(cat "$TMP/out")"
ok "a VM the platform deleted before the approval needs no drain"
deleted_history 105.5
! judge >"$TMP/out" || fail "a VM deleted after the approval, never prepared for it, passed"
grep -q "approved but vm_7 never finished preparing" "$TMP/out" || fail "not said: $(cat "$TMP/out")"
ok "one deleted after the approval, never prepared for it, is a violation"

X=3c1f9a7e-5d2b-4e80-a1f6-7b9c0d2e4f11
# forced_on_deleted DELETED_AT: a Redeploy X of vm_6 (FD 0) created at 100, never drained; vm_6
# deleted by a Terminate (E) at DELETED_AT; X started by the platform at NotBefore (104) all
# the same (imds-sim keeps it: nemesis seed 33), impacts vm_6 104..106; meanwhile vm_2 (FD 2)
# prepares for the Reboot R 104.5..105, approved at 105, impacted 105..105.5, recovered after
forced_on_deleted() {
    {
        echo '{"wall":100,"kind":"created","event":"'$X'","event_type":"Redeploy","resources":["vm_6"],"duration":60}'
        echo '{"wall":100.5,"kind":"created","event":"'$E'","event_type":"Terminate","resources":["vm_6"],"duration":-1}'
        echo '{"wall":100.5,"kind":"created","event":"'$R'","event_type":"Reboot","resources":["vm_2"],"duration":30}'
        echo '{"wall":'"$1"',"kind":"started","event":"'$E'","how":"not_before","event_type":"Terminate"}'
        echo '{"wall":'"$1"',"kind":"impact_start","vm":"vm_6","event":"'$E'","deleted":true}'
        echo '{"wall":104,"kind":"started","event":"'$X'","how":"not_before","event_type":"Redeploy"}'
        echo '{"wall":104,"kind":"impact_start","vm":"vm_6","event":"'$X'"}'
        echo '{"wall":105,"kind":"post","vm":"vm_0","events":["'$R'"],"status":200}'
        echo '{"wall":105,"kind":"started","event":"'$R'","how":"approved","event_type":"Reboot"}'
        echo '{"wall":105,"kind":"impact_start","vm":"vm_2","event":"'$R'"}'
        echo '{"wall":105.5,"kind":"impact_end","vm":"vm_2","event":"'$R'"}'
        echo '{"wall":105.5,"kind":"completed","event":"'$R'"}'
        echo '{"wall":106,"kind":"impact_end","vm":"vm_6","event":"'$X'"}'
        echo '{"wall":106,"kind":"completed","event":"'$X'"}'
        echo '{"wall":106,"kind":"completed","event":"'$E'"}'
    } | sort -s -t: -k2,2n >"$TMP/tl.jsonl"
    {
        printf 'start prepare vm_6 %s 100.6 1\nend prepare vm_6 %s 100.7 1\n' "$E" "$E"
        printf 'start prepare vm_2 %s 104.5 1\nend prepare vm_2 %s 105 1\n' "$R" "$R"
        printf 'start recover vm_2 %s 105.6 1\nend recover vm_2 %s 105.7 1\n' "$R" "$R"
    } >"$TMP/hooks.log"
    echo '{"events":[{"EventId":"'$X'","EventType":"Redeploy","EventStatus":"Completed","Resources":["vm_6"],"DurationInSeconds":60},{"EventId":"'$E'","EventType":"Terminate","EventStatus":"Completed","Resources":["vm_6"],"DurationInSeconds":-1},{"EventId":"'$R'","EventType":"Reboot","EventStatus":"Completed","Resources":["vm_2"],"DurationInSeconds":30}],"vms":[{"name":"vm_6","deleted":true}]}' >"$TMP/state.json"
}
forced_on_deleted 102
judge >"$TMP/out" || fail "a forced event on a VM deleted before it blocked another domain: $(cat "$TMP/out")"
ok "an event the platform starts on a VM it deleted before impacts nothing in service"
forced_on_deleted 104.8
! judge >"$TMP/out" || fail "a prepare while a VM in service was impacted undrained passed"
grep -q "vm_2 (FD 2) started preparing for $R at 104.500 while vm_6 (FD 0) was impacted undrained" "$TMP/out" ||
    fail "not said: $(cat "$TMP/out")"
ok "deleted after that start, it was in service when impacted undrained: a violation"
