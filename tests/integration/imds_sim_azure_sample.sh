#!/usr/bin/env bash
# Azure's own Python sample (the advanced_sample of the Scheduled Events page, seed 001),
# unchanged apart from its URL, run with Debian's python3-requests against one VM of the
# simulator: it sees the events, and its approval of a user-initiated Reboot starts the
# event for every VM in Resources.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"

sample_python
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

sample_run "$py" '["vm_0","vm_1"]'

sample_checked vm_2 vm_0,vm_1
sim_stop
ok "the sample's approval of a user Reboot starts it for every VM in Resources"
echo "imds_sim_azure_sample: all passed"
