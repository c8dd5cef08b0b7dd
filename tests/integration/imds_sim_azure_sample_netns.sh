#!/usr/bin/env bash
# Azure's own Python sample (the advanced_sample of the Scheduled Events page, seed 001, kept
# in tests/imds-sim/azure_advanced_sample.py) run WITHOUT any edit: its own
# http://169.254.169.254/metadata/scheduledevents, in a network namespace of this test
# (sc-imds<pid>) where 169.254.169.254 is an address of lo and imds-sim, run inside it, serves
# vm_0 there (--vm-listen vm_0=169.254.169.254:80; its control API on the namespace's
# 127.0.0.1). The sample sees the events, logs a platform Freeze, and its approval of a
# user-initiated Reboot starts the event for every VM in Resources. No packet leaves the
# namespace. Needs root and iproute2 (skipped, 77, otherwise); the namespace is deleted on
# exit, even on failure. (imds_sim_azure_sample.sh runs the same sample with its URL edited.)

if [ "${1:-}" != --inside ]; then
    # --- outside: the namespace, then this script again inside it
    set -u
    if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
        echo "SKIP: needs root and iproute2 (ip netns)"
        exit 77
    fi
    NS="sc-imds$$"
    cleanup() {
        # anything still inside (the simulator, the sample) would keep the namespace alive
        ip netns pids "$NS" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns del "$NS" 2>/dev/null || true
    }
    trap cleanup EXIT
    trap 'exit 143' INT TERM
    ip netns add "$NS" || { echo "FAIL: ip netns add $NS" >&2; exit 1; }
    ip -n "$NS" link set lo up &&
        ip -n "$NS" addr add 169.254.169.254/32 dev lo ||
        { echo "FAIL: cannot put 169.254.169.254 on lo of $NS" >&2; exit 1; }
    rc=0
    ip netns exec "$NS" bash "$0" --inside "$NS" || rc=$?
    exit "$rc"
fi

# --- inside the namespace
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"
NS=$2
[ "$(ip netns identify $$)" = "$NS" ] || fail "not inside $NS"
[[ "$(ip -br addr show dev lo)" == *169.254.169.254/32* ]] || fail "169.254.169.254 is not on lo of $NS"

sample_python
SAMPLE="$SC_SRC/tests/imds-sim/azure_advanced_sample.py"
grep -q '^metadata_url ="http://169.254.169.254/metadata/scheduledevents"$' "$SAMPLE" ||
    fail "the sample's metadata_url is not Azure's own"
SEED="$SC_SRC/../shared/seeds/001_0c1a3b3f3d53486a.txt"
[ -f "$SEED" ] || SEED=/work/shared/seeds/001_0c1a3b3f3d53486a.txt
if [ -f "$SEED" ]; then
    # the sample as published: from "#!/usr/bin/python" to "main()", 4-space indent removed
    a=$(grep -n '^    #!/usr/bin/python' "$SEED" | head -1 | cut -d: -f1)
    b=$(awk -v a="$a" 'NR > a && /^        main\(\)/ { print NR; exit }' "$SEED")
    sed -n "${a},${b}p" "$SEED" | sed 's/^    //' | cmp -s - "$SAMPLE" ||
        fail "tests/imds-sim/azure_advanced_sample.py is not the seed's sample"
fi

sim_start --vms 3 --fault-domains 3 --vm-listen vm_0=169.254.169.254:80
grep -qx 'vm-listen vm_0 169.254.169.254:80' "$TMP/sim.out" || fail "no vm_0 on 169.254.169.254:80: $(cat "$TMP/sim.out")"
# what an unmodified client reads first: the whole instance document, at the real address
inst=$(curl -sS -H Metadata:true "http://169.254.169.254/metadata/instance?api-version=2021-02-01")
eq "$(echo "$inst" | jq -r '.compute.name + " " + .network.interface[0].ipv4.ipAddress[0].privateIpAddress')" \
    "vm_0 10.0.0.4" "instance document at 169.254.169.254"
ok "in $NS: 169.254.169.254 on lo, imds-sim serving vm_0 there (instance document: vm_0, 10.0.0.4)"

sample_run "$SAMPLE" '["vm_1","vm_2"]'

sample_checked vm_0 vm_1,vm_2
# every request of vm_0 came from the sample (or the curl above) through 169.254.169.254: the
# sample's GETs are there, each answered 200
gets=$(timeline | jq '[.[] | select(.kind == "get" and .vm == "vm_0" and (.path | not))] | [length, all(.status == 200)] | map(tostring) | join(" ")' -r)
[[ "$gets" =~ ^([2-9]|[1-9][0-9]+)\ true$ ]] || fail "the sample's GETs of vm_0: $gets"
sim_stop
ok "the unchanged sample's approval at 169.254.169.254 starts a user Reboot for every VM in Resources"
echo "imds_sim_azure_sample_netns: all passed"
