#!/usr/bin/env bash
# check.py, the suite's judge of the safety rules, judged on made-up histories (no daemons):
# rule 1's allowance for a POST that reached IMDS after the platform had started the event at
# NotBefore (a drain that ended right then) holds for exactly that, and no more: a POST
# before the start, or two POSTs, are still violations.
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
