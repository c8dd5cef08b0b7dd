#!/usr/bin/env bash
# deploy/azure/, tested as far as this machine can (nothing here reaches Azure):
#  1. the ARM templates are JSON, every parameters('x') / variables('x') they use is defined,
#     and the CustomScript command they give install.sh (and cloud-init.yaml's runcmd) uses
#     only flags of install.sh --help, with the ones it requires;
#  2. install.sh --root, for two VMs (vm_0, vm_1) whose names come from imds-sim, installs
#     the package built by cpack and writes a config both daemons start from (vm_0 leads, both
#     agents reach it over CURVE), key files of mode 0600 and units that verify; a second run
#     changes no file;
#  3. bad input exits 2 naming what is wrong, and writes nothing.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"

AZ="$SC_SRC/deploy/azure"
INSTALL="$AZ/install.sh"
BUILD=$(dirname "$SC_BIN")
PREFIX=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")
[ -n "$PREFIX" ] || fail "no CMAKE_INSTALL_PREFIX in $BUILD/CMakeCache.txt"

# --- 1. the templates and cloud-init against install.sh's flags
"$INSTALL" --help >"$TMP/help" || fail "install.sh --help exited $?"
python3 - "$TMP/help" "$AZ/availability-set.json" "$AZ/scale-set.json" "$AZ/cloud-init.yaml" <<'PY' ||
import json, re, sys

flags = set(re.findall(r"^\s+(--[a-z0-9-]+)", open(sys.argv[1]).read(), re.M))
need = {"--deb", "--members", "--keyring-b64"}
assert need <= flags, f"install.sh --help lacks {need - flags}"
bad = []

def check_command(where, cmd):
    used = set(re.findall(r"(?<![A-Za-z0-9-])--[a-z][a-z0-9-]*", cmd))
    if used - flags:
        bad.append(f"{where}: install.sh has no {sorted(used - flags)}")
    if not need <= used or not used & {"--key-b64", "--keys-b64"}:
        bad.append(f"{where}: install.sh needs {sorted(need)} and --key-b64 or --keys-b64; given {sorted(used)}")

def strings(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)
    elif isinstance(node, str):
        yield node

def extensions(node):
    if isinstance(node, dict):
        if node.get("type") == "CustomScript" and node.get("publisher") == "Microsoft.Azure.Extensions":
            yield node
        for v in node.values():
            yield from extensions(v)
    elif isinstance(node, list):
        for v in node:
            yield from extensions(v)

for path in sys.argv[2:4]:
    name = path.rsplit("/", 1)[-1]
    t = json.load(open(path))
    for kind in ("parameters", "variables"):
        defined = set(t.get(kind, {}))
        for c in t.get("variables", {}).get("copy", []) if kind == "variables" else []:
            defined.add(c["name"])
        for s in strings(t):
            for ref in re.findall(kind + r"\('([^']+)'\)", s):
                if ref not in defined:
                    bad.append(f"{name}: {kind}('{ref}') is not defined")
    exts = list(extensions(t))
    if not exts:
        bad.append(f"{name}: no CustomScript extension")
    for e in exts:
        cmd = e.get("protectedSettings", {}).get("commandToExecute") or e.get("settings", {}).get("commandToExecute")
        if not cmd:
            bad.append(f"{name}: the CustomScript extension has no commandToExecute")
            continue
        if "install.sh" not in cmd:
            bad.append(f"{name}: commandToExecute does not run install.sh: {cmd}")
        check_command(name, cmd)
    print(f"{name}: {len(exts)} extension(s), {len(t['parameters'])} parameters")

ci = open(sys.argv[4]).read()
if not ci.startswith("#cloud-config"):
    bad.append("cloud-init.yaml: does not start with #cloud-config")
runs = [l for l in ci.splitlines() if "install.sh" in l and "--" in l]
if not runs:
    bad.append("cloud-init.yaml: runcmd does not run install.sh")
check_command("cloud-init.yaml", " ".join(runs))
if bad:
    sys.exit("\n".join(bad))
PY
    fail "the templates do not match install.sh"
ok "templates: JSON, every parameter and variable defined, CustomScript passes install.sh its flags"

# --- 2. the package, installed on two VMs' scratch roots
for t in cpack dpkg-deb; do
    command -v $t >/dev/null || {
        echo "note: no $t here: install.sh was not run (only the templates were checked)"
        exit 0
    }
done
cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/pkg" >"$TMP/cpack.log" 2>&1 ||
    fail "cpack failed: $(tail -5 "$TMP/cpack.log")"
DEB=$(ls "$TMP"/pkg/schedcoord_*.deb)
sc_sim_start --vms 2 --fault-domains 2
read -r -a P <<<"$(free_ports 2)"
MEMBERS="vm_0=127.0.0.1:${P[0]},vm_1=127.0.0.1:${P[1]}"
mkdir -p "$TMP/keys"
for i in 0 1; do
    "$SC_BIN/schedcoordctl" keygen --name "vm_$i" --out "$TMP/keys" >>"$TMP/keyring" || fail "keygen vm_$i"
done
KEYRING_B64=$(base64 -w0 "$TMP/keyring")
# vm_1 as in the scale set: a bundle of every VM's key pair, of which it keeps its own
for i in 0 1; do echo "vm_$i $(base64 -w0 "$TMP/keys/vm_$i.key")"; done >"$TMP/keys.bundle"
install_vm() { # I [ARGS...]: install.sh for vm_I into $TMP/vm_I/root
    local i=$1 key=(--key-b64 "$(base64 -w0 "$TMP/keys/vm_0.key")")
    shift
    [ "$i" = 0 ] || key=(--keys-b64 "$(base64 -w0 "$TMP/keys.bundle")")
    "$INSTALL" --root "$TMP/vm_$i/root" --deb "$DEB" --members "$MEMBERS" \
        --keyring-b64 "$KEYRING_B64" "${key[@]}" --imds-url "$B/vm_$i" "$@"
}
sums() { (cd "$1" && find . -type f -printf '%m %p\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
for i in 0 1; do
    mkdir -p "$TMP/vm_$i/root"
    install_vm $i >"$TMP/install_$i.log" 2>&1 || fail "install.sh vm_$i exited $?: $(cat "$TMP/install_$i.log")"
    R="$TMP/vm_$i/root"
    [ -x "$R$PREFIX/bin/schedcoord-agent" ] || fail "vm_$i: the package is not installed in the root"
    [ "$(stat -c %a "$R/etc/schedcoord/vm_$i.key")" = 600 ] ||
        fail "vm_$i: key file mode $(stat -c %a "$R/etc/schedcoord/vm_$i.key")"
    cmp -s "$R/etc/schedcoord/vm_$i.key" "$TMP/keys/vm_$i.key" || fail "vm_$i: the key file is not the key pair given"
    [ ! -e "$R/etc/schedcoord/vm_$((1 - i)).key" ] || fail "vm_$i holds vm_$((1 - i))'s key"
    grep -q "units not enabled" "$TMP/install_$i.log" || fail "vm_$i: no word about the units: $(cat "$TMP/install_$i.log")"
    sums "$R" >"$TMP/sums_$i.1"
    install_vm $i >"$TMP/install_$i.2.log" 2>&1 || fail "install.sh vm_$i (again) exited $?"
    sums "$R" >"$TMP/sums_$i.2"
    diff "$TMP/sums_$i.1" "$TMP/sums_$i.2" >"$TMP/sums.diff" || fail "vm_$i: a second run changed: $(cat "$TMP/sums.diff")"
done
d=$(diff "$TMP/vm_0/root/etc/schedcoord/schedcoord.conf" "$TMP/vm_1/root/etc/schedcoord/schedcoord.conf" |
    grep '^[<>]' | grep -v '^[<>] imds-url = ' || true)
[ -z "$d" ] || fail "the VMs' configs differ beyond the IMDS URL: $d"
ok "install.sh --root: package, config, keyring, key files (0600) for vm_0 (its key) and vm_1 (the bundle); a second run changes nothing"

# cloud-init.yaml, filled for vm_1 by render-cloud-init.sh: its write_files holds install.sh
# whole, and its runcmd (pointed at a scratch root and imds-sim) writes vm_1's files again
if ! python3 -c 'import yaml' 2>/dev/null; then
    echo "note: no python3 yaml here: cloud-init.yaml was not checked"
else
    "$AZ/render-cloud-init.sh" "$DEB" "$MEMBERS" "$TMP/keyring" "$TMP/keys/vm_1.key" >"$TMP/vm_1.yaml" ||
        fail "render-cloud-init.sh exited $?"
    mkdir -p "$TMP/ci/root"
    python3 - "$TMP/vm_1.yaml" "$INSTALL" "$TMP/ci" >"$TMP/ci/argv" <<'PY' || fail "cloud-init.yaml for vm_1: see above"
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
f = doc["write_files"][0]
assert f["content"] == open(sys.argv[2]).read(), "write_files does not hold install.sh as it is"
argv = doc["runcmd"][0]
assert argv[:2] == ["bash", f["path"]], f"runcmd does not run {f['path']}: {argv}"
open(sys.argv[3] + "/install.sh", "w").write(f["content"])
print("\n".join([argv[0], sys.argv[3] + "/install.sh"] + argv[2:]))
PY
    mapfile -t CI <"$TMP/ci/argv"
    "${CI[@]}" --root "$TMP/ci/root" --imds-url "$B/vm_1" >"$TMP/ci/log" 2>&1 || fail "cloud-init's runcmd exited $?: $(cat "$TMP/ci/log")"
    diff -r "$TMP/ci/root/etc" "$TMP/vm_1/root/etc" >"$TMP/ci.diff" || fail "cloud-init wrote other files: $(cat "$TMP/ci.diff")"
    ok "cloud-init.yaml (render-cloud-init.sh): install.sh whole, its runcmd writes vm_1's files as the extension does"
fi

UNITS="$TMP/vm_0/root$PREFIX/lib/systemd/system"
if sc_verify_units "$UNITS" "$PREFIX" "$TMP/vm_0/root$PREFIX/bin" \
    schedcoord-agent.service schedcoord-coordinator.service schedcoord-metrics.socket schedcoord-metrics@.service; then
    ok "systemd-analyze verify: the units installed by install.sh are clean"
else
    echo "note: no systemd-analyze here; the installed units were not checked"
fi

# both daemons of each VM, from its root, with the config install.sh wrote (its /etc paths
# moved into the root) and their units' arguments
for i in 0 1; do
    R="$TMP/vm_$i/root"
    sed "s|/etc/schedcoord/|$R/etc/schedcoord/|g" "$R/etc/schedcoord/schedcoord.conf" >"$TMP/vm_$i.conf"
    for d in coordinator:coord agent:agent; do
        grep -q "^ExecStart=$PREFIX/bin/schedcoord-${d%:*} --config /etc/schedcoord/schedcoord.conf " \
            "$R$PREFIX/lib/systemd/system/schedcoord-${d%:*}.service" || fail "the ${d%:*} unit reads another config"
        mkdir -p "$TMP/vm_$i/state/${d#*:}"
        chmod 700 "$TMP/vm_$i/state/${d#*:}" # StateDirectoryMode=0700
        "$R$PREFIX/bin/schedcoord-${d%:*}" --config "$TMP/vm_$i.conf" --state-dir "$TMP/vm_$i/state/${d#*:}" \
            2>"$TMP/${d%:*}_$i.err" &
        PIDS+=("$!")
    done
done
alive() {
    [ "$("$SC_BIN/schedcoordctl" --state-dir "$TMP/vm_0/state/coord" status --json 2>/dev/null |
        jq '[.members[] | select(.alive)] | length')" = 2 ]
}
sc_wait_until 20 alive || fail "the agents never reached vm_0's coordinator: $(tail -3 "$TMP"/*.err)"
for i in 0 1; do # (IMDS may throttle the installs' and the daemons' compute requests: 429, retried)
    sc_wait_until 10 grep -q "msg=\"started\" name=vm_$i " "$TMP/coordinator_$i.err" ||
        fail "vm_$i's coordinator did not take its name from IMDS: $(head -3 "$TMP/coordinator_$i.err")"
done
! grep -qi insecure "$TMP"/*.err || fail "plain text, not CURVE"
ok "the written configs: both VMs' coordinators and agents start, vm_0's sees both agents over CURVE"
for p in "${PIDS[@]}"; do [ "$p" = "$SIM_PID" ] || sc_stop daemon "$p" "$TMP/coordinator_0.err"; done

# --- 3. bad input: exit 2, the culprit named, nothing written
bad_input() { # WORD ARGS...: install.sh ARGS exits 2 naming WORD
    local word=$1 rc=0 out
    shift
    rm -rf "$TMP/bad" && mkdir -p "$TMP/bad"
    out=$("$INSTALL" --root "$TMP/bad" --imds-url "$B/vm_0" "$@" 2>&1) || rc=$?
    [ "$rc" = 2 ] || fail "install.sh $*: exit $rc, not 2: $out"
    [[ "$out" == *"$word"* ]] || fail "install.sh $*: the message does not name $word: $out"
    [ -z "$(ls -A "$TMP/bad")" ] || fail "install.sh $*: wrote $(ls -A "$TMP/bad") despite bad input"
}
K0=$(base64 -w0 "$TMP/keys/vm_0.key")
bad_input members --deb "$DEB" --keyring-b64 "$KEYRING_B64" --key-b64 "$K0"
bad_input "members: 'vm_1'" --deb "$DEB" --members vm_0=127.0.0.1:1,vm_1 --keyring-b64 "$KEYRING_B64" --key-b64 "$K0"
bad_input "key pair" --deb "$DEB" --members "$MEMBERS" --keyring-b64 "$KEYRING_B64"
bad_input "key: not base64" --deb "$DEB" --members "$MEMBERS" --keyring-b64 "$KEYRING_B64" --key-b64 '#!%'
bad_input "key: not a key pair" --deb "$DEB" --members "$MEMBERS" --keyring-b64 "$KEYRING_B64" --key-b64 "$(echo junk | base64)"
bad_input "vm_0's public key" --deb "$DEB" --members "$MEMBERS" --keyring-b64 "$KEYRING_B64" \
    --key-b64 "$(base64 -w0 "$TMP/keys/vm_1.key")"
bad_input "no public key for member vm_1" --deb "$DEB" --members "$MEMBERS" \
    --keyring-b64 "$(head -1 "$TMP/keyring" | base64 -w0)" --key-b64 "$K0"
bad_input "cannot read /nonexistent.deb" --deb /nonexistent.deb --members "$MEMBERS" \
    --keyring-b64 "$KEYRING_B64" --key-b64 "$K0"
bad_input "keys: no key pair for this VM (vm_0)" --deb "$DEB" --members "$MEMBERS" --keyring-b64 "$KEYRING_B64" \
    --keys-b64 "$(tail -1 "$TMP/keys.bundle" | base64 -w0)"
bad_input "unknown argument '--name'" --name vm_0
ok "bad input (no or malformed members, no, garbled or foreign key, keyring short of a member, no package, unknown flag): exit 2, named, nothing written"
