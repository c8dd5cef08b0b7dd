#!/usr/bin/env bash
# Members that disagree on --members (issue 20, finding 2). A changed --members rolled out one
# VM at a time: here each member's fault domain ("/FD") added, which changes the voters
# (proto/sc_voters.h). vm_0 .. vm_2 still run the old list (voters vm_0, vm_1, vm_2), vm_3 and
# vm_4 the new one (voters vm_0, vm_3, vm_4). When only vote requests carried a digest (of the
# voters), vm_4 won with vm_3 while vm_2 won with vm_1: two leaders acting in term 1. Now every
# coordinator-to-coordinator message carries the members digest; one of another digest is
# refused and said (warning naming both digests and the peer, ALERT members_mismatch, status,
# metrics), and a coordinator that hears a voter of its list disagree does not lead. Checked
# from outside: every member's status sampled for 20 s and their "may act" log lines never show
# two members acting at once; vm_0 .. vm_2, whose voters all agree, elect one that acts; vm_0,
# vm_3 and vm_4 report the mismatch (status, log, metrics). Then vm_3 and vm_4 run the old list
# again: the mismatch is gone from every status, one member acts.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 5 --fault-domains 3 --time-scale 100 --complete-after 100
LATE="3 4" set_start 5
MA=$MEMBERS
# the same list with fault domains: vm_0 .. vm_2 in 0, vm_3 in 1, vm_4 in 2
MB=$(echo "$MA" | tr ',' '\n' | awk '{ i = substr($0, 4, index($0, "=") - 4) + 0; print $0 "/" (i < 3 ? 0 : i - 2) }' | paste -sd, -)
[ "$MB" != "$MA" ] && [ "$(echo "$MB" | grep -o '/' | wc -l)" -eq 5 ] || fail "MB: $MB"
for i in 3 4; do MEMBERS=$MB agent_start "$i"; done
VOTERS=3 coord_start --start-grace 2
coords_start 3 --voters 3 --start-grace 2
for i in 3 4; do MEMBERS=$MB coord_i_start "$i" --voters 3 --start-grace 2; done
ctl_quiet_i() { cst "vm_$1" >/dev/null; }
for i in 1 2 3 4; do wait_for 10 ctl_quiet_i "$i" || fail "vm_$i's coordinator did not start"; done
grep -q 'msg="election" voters=vm_0,vm_1,vm_2 ' "$TMP/coord_2.err" &&
    grep -q 'msg="election" voters=vm_0,vm_3,vm_4 ' "$TMP/coord_4.err" ||
    fail "the two lists do not choose the voters the test is about: $(grep -h 'msg="election" voters' "$TMP"/coord*.err)"
ok "vm_0 .. vm_2 choose voters vm_0, vm_1, vm_2; vm_3 and vm_4 (with /FD) vm_0, vm_3, vm_4"

# acts VM: VM's status says it leads and may act (its status logged to samples.jsonl)
acts() {
    local s
    s=$(cst "$1") || return 1
    echo "$s" | jq -c '{self, role, term, may_act, leader, members_mismatch}' >>"$TMP/samples.jsonl"
    [ "$(echo "$s" | jq -r '.role == "leader" and .may_act')" = true ]
}
# sample: every member's status once; fails when two lead and may act, read again at once (the
# statuses are read one after the other: a lead handed over between two reads is no overlap)
sample() {
    local i acting=()
    for i in 0 1 2 3 4; do ! acts "vm_$i" || acting+=("vm_$i"); done
    [ "${#acting[@]}" -le 1 ] || ! acts "${acting[0]}" || ! acts "${acting[1]}" ||
        fail "${acting[*]} lead and may act at once: $(tail -7 "$TMP/samples.jsonl")"
    [ "${#acting[@]}" -eq 0 ] || echo "${acting[0]}" >>"$TMP/acting"
}
: >"$TMP/acting"
end=$((SECONDS + 20))
while [ "$SECONDS" -lt "$end" ]; do
    sample
    sleep 0.2
done
one_leader
ok "over 20 s of every member's status and their may-act log lines, never two members acting"

sort -u "$TMP/acting" >"$TMP/acting.u"
[ -s "$TMP/acting" ] && ! grep -qv '^vm_[012]$' "$TMP/acting.u" ||
    fail "the members acting were $(paste -sd' ' "$TMP/acting.u") (expected one of vm_0 .. vm_2)"
leader_wait 10 3 || fail "vm_0 .. vm_2 agree on no acting leader: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, may_act}'; done)"
for i in 3 4; do
    [ "$(cst "vm_$i" | jq -r .role)" != leader ] || fail "vm_$i leads: $(cst "vm_$i" | jq -c .)"
done
ok "$LEADER acts for vm_0 .. vm_2; vm_3 and vm_4 do not lead"

# the mismatch said: status (vm_3 and vm_4: their voter vm_0; vm_0: vm_3 or vm_4), both digests
mm() { cst "$1" | jq -c '.members_mismatch // empty'; }
A=$(mm vm_3) && [ -n "$A" ] || fail "vm_3's status shows no mismatch: $(cst vm_3 | jq -c .)"
OURS_B=$(echo "$A" | jq -r .ours)
THEIRS_B=$(echo "$A" | jq -r .theirs)
echo "$A" | jq -e '.peer == "vm_0" and .voter == true and (.since_ms | type) == "number"' >/dev/null &&
    [ ${#OURS_B} -eq 16 ] && [ ${#THEIRS_B} -eq 16 ] && [ "$OURS_B" != "$THEIRS_B" ] ||
    fail "vm_3's members_mismatch: $A"
B4=$(mm vm_4)
echo "$B4" | jq -e --arg o "$OURS_B" --arg t "$THEIRS_B" '.peer == "vm_0" and .ours == $o and .theirs == $t' >/dev/null ||
    fail "vm_4's members_mismatch: $B4"
Z=$(mm vm_0)
echo "$Z" | jq -e --arg o "$THEIRS_B" --arg t "$OURS_B" '(.peer == "vm_3" or .peer == "vm_4") and .voter == false and .ours == $o and .theirs == $t' >/dev/null ||
    fail "vm_0's members_mismatch: $Z"
ok "status: vm_3 and vm_4 name their voter vm_0 ($THEIRS_B, theirs $OURS_B); vm_0 names $(echo "$Z" | jq -r .peer)"
for f in coord_3 coord_4; do
    grep -q "msg=\"peer message refused: members differ\" peer=vm_0 ours=$OURS_B theirs=$THEIRS_B " "$TMP/$f.err" ||
        fail "$f.err has no refusal naming vm_0 and both digests: $(grep -m3 'members' "$TMP/$f.err")"
    grep -q 'msg="ALERT" alert=members_mismatch .*member=vm_0 ' "$TMP/$f.err" ||
        fail "$f.err has no ALERT members_mismatch"
done
grep -Eq "msg=\"peer message refused: members differ\" peer=vm_[34] ours=$THEIRS_B theirs=$OURS_B " "$TMP/coord.err" ||
    fail "vm_0's log has no refusal: $(grep -m3 'members' "$TMP/coord.err")"
for f in coord_3 coord_4; do
    grep -q "why=\"held back from leading: voter vm_0 runs with members digest $THEIRS_B, ours $OURS_B\"" "$TMP/$f.err" ||
        fail "$f never said it is held back: $(grep -h 'held' "$TMP/$f.err" | head -3)"
done
"$SC_BIN/schedcoordctl" --state-dir "$TMP/coord_3" metrics >"$TMP/metrics.txt" || fail "metrics"
grep -qx 'schedcoord_members_mismatch 1' "$TMP/metrics.txt" &&
    grep -qx "schedcoord_members_mismatch_info{peer=\"vm_0\",ours=\"$OURS_B\",theirs=\"$THEIRS_B\"} 1" "$TMP/metrics.txt" &&
    grep -Eqx 'schedcoord_members_mismatch_refused_total [1-9][0-9]*' "$TMP/metrics.txt" &&
    grep -Eqx 'schedcoord_alerts_total\{alert="members_mismatch"\} [1-9][0-9]*' "$TMP/metrics.txt" ||
    fail "vm_3's metrics: $(grep members_mismatch "$TMP/metrics.txt")"
ok "the log (refusal with both digests, ALERT, held) and the metrics say it too"

# vm_3 and vm_4 given the old list again: they agree, the mismatch leaves every status
for i in 3 4; do
    sc_stop coordinator "${CPIDS[$i]}" "$TMP/coord_$i.err"
    coord_i_start "$i" --voters 3 --start-grace 2
done
no_mismatch() {
    local i
    for i in 0 1 2 3 4; do [ "$(cst "vm_$i" | jq -c '.members_mismatch')" = null ] || return 1; done
}
wait_for 40 no_mismatch || fail "a mismatch is still shown: $(for i in 0 1 2 3 4; do cst "vm_$i" | jq -c '{self, members_mismatch}'; done)"
agree() { l=$(leader 5) && [ -n "$l" ]; }
wait_for 20 agree || fail "the five do not agree on an acting leader: $(for i in 0 1 2 3 4; do cst "vm_$i" | jq -c '{self, role, leader, may_act}'; done)"
one_leader
ok "with one list again: no mismatch in any status, $(leader 5) acts for all five"
for i in 1 2 3 4; do sc_stop coordinator "${CPIDS[$i]}" "$TMP/coord_$i.err"; done
coord_stop
