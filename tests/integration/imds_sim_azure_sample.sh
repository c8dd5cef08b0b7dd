#!/usr/bin/env bash
# Azure's own Python sample (the advanced_sample of the Scheduled Events page, seed 001),
# unchanged apart from its URL, run with Debian's python3-requests against one VM of the
# simulator: it sees the events, and its approval of a user-initiated Reboot starts the
# event for every VM in Resources.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"

# The first python3 that has requests: PATH's, else Debian's (python3-requests).
PYTHON=""
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import requests' 2>/dev/null; then PYTHON=$p; break; fi
done
[ -n "$PYTHON" ] || fail "no python3 with requests (deploy/install-deps.sh --test installs python3-requests)"
SEED="${SC_SRC:-.}/../shared/seeds/001_0c1a3b3f3d53486a.txt"
[ -f "$SEED" ] || SEED=/work/shared/seeds/001_0c1a3b3f3d53486a.txt
py="$TMP/advanced_sample.py"
if [ -f "$SEED" ]; then
    # The sample as published: from "#!/usr/bin/python" to "main()", 4-space indent removed.
    a=$(grep -n '^    #!/usr/bin/python' "$SEED" | head -1 | cut -d: -f1)
    b=$(awk -v a="$a" 'NR > a && /^        main\(\)/ { print NR; exit }' "$SEED")
    sed -n "${a},${b}p" "$SEED" | sed 's/^    //' >"$TMP/orig.py"
    cmp -s "$TMP/orig.py" "$SC_SRC/tests/imds-sim/azure_advanced_sample.py" ||
        echo "note: the seed's sample differs from tests/imds-sim/azure_advanced_sample.py"
else
    cp "${SC_SRC:-.}/tests/imds-sim/azure_advanced_sample.py" "$TMP/orig.py"
fi
grep -q '^metadata_url ="http://169.254.169.254/metadata/scheduledevents"' "$TMP/orig.py" || fail "sample has no metadata_url line"

sim_start --vms 3 --fault-domains 3
sed "s#^metadata_url =\"http://169.254.169.254/metadata/scheduledevents\"#metadata_url =\"$B/vm_2/metadata/scheduledevents\"#" \
    "$TMP/orig.py" >"$py"
eq "$(diff "$TMP/orig.py" "$py" | grep -c '^[<>]')" 2 "only the URL line changed"

# A platform Freeze of 30 s: not approved by the sample, only logged (its Description).
pf=$(create '{"EventType":"Freeze","Resources":["vm_1"],"NoticeSeconds":900,"DurationInSeconds":30}')
fifo="$TMP/stdin"; out="$TMP/sample.out"
rm -f "$fifo"; mkfifo "$fifo"
"$PYTHON" -u "$py" <"$fifo" >"$out" 2>"$TMP/sample.err" &
PY=$!
exec 3>"$fifo"
trap '{ exec 3>&-; } 2>/dev/null || true; kill $PY 2>/dev/null || true; sc_cleanup' EXIT

# Nothing here runs against a clock (the Freeze's notice is 15 minutes, the Reboot waits for
# the approval): the bounds below only wait for a python that a loaded machine starts slowly
# (no prompt yet after 10 s at load 15 on 2 cores), and decide nothing.
wait_for 60 grep -q 'Press 1' "$out" || fail "sample did not start: $(cat "$out" "$TMP/sample.err")"
echo 1 >&3   # "Press 1 to poll for new events"
wait_for 60 grep -q 'Processed events from document: 2' "$out" || fail "sample did not process document 2: $(cat "$out" "$TMP/sample.err")"
grep -q 'memory-preserving Live Migration' "$out" || fail "sample did not log the Freeze"
ok "the sample sees the platform event (logs its Description)"

echo 1 >&3   # poll again: the sample waits for a new DocumentIncarnation
sleep 1.5
ue=$(create '{"EventType":"Reboot","EventSource":"User","Resources":["vm_0","vm_1"],"NoticeSeconds":900,"DurationInSeconds":60}')
wait_for 60 grep -q 'Processed events from document: 3' "$out" || fail "sample did not process document 3: $(cat "$out" "$TMP/sample.err")"
echo 2 >&3   # "Press 2 to exit"
exec 3>&-
wait $PY || fail "sample exited with $?: $(cat "$TMP/sample.err")"

eq "$(ev_field "$ue" EventStatus)" Started "user Reboot started by the sample's approval"
eq "$(ev_field "$ue" started_how)" approved "how"
eq "$(ev_field "$ue" '[.approvals[].vm] | join(",")')" vm_2 "approved by the sample's VM"
eq "$(ev_field "$ue" '[.impacts[].vm] | join(",")')" vm_0,vm_1 "impact on every VM in Resources"
eq "$(timeline | jq -r --arg id "$ue" '[.[] | select(.kind == "post" and .vm == "vm_2" and .status == 200 and (.events | index($id)))] | length')" 1 "one POST by the sample"
eq "$(ev_field "$pf" EventStatus)" Scheduled "the platform Freeze (30 s) was not approved"
sim_stop
ok "the sample's approval of a user Reboot starts it for every VM in Resources"
echo "imds_sim_azure_sample: all passed"
