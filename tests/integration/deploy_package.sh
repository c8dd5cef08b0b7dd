#!/usr/bin/env bash
# The installed tree and the Debian package, as an operator gets them:
#  1. `cmake --install` puts the three programs, the systemd units, the example settings,
#     hooks and documentation where the README says; an installed example hook runs from
#     there (it finds hooklib.sh beside it, also through a symlink);
#  2. the units pass `systemd-analyze verify` (no unknown key, no bad value), the agent's
#     with each example drop-in too, and stay hardened (`systemd-analyze security` exposure
#     at most 2.5 for the agent, 2.0 for the coordinator, 1.5 for a scrape); each program has
#     a man page listing every entry (flag, command) of its --help, which troff renders
#     without a warning;
#  3. `cpack -G DEB` builds a package holding the same files, depending on the Debian
#     packages of the four libraries;
#  4. the units' own ExecStart lines, run from the installed tree with the installed example
#     settings (only the set's addresses, keys and paths changed, as an operator would), bring
#     up a coordinator and an agent over CURVE that drain and approve an event through the
#     installed example hooks — each daemon with what of its unit's sandbox a process can
#     give itself: no new privileges, no capability (as root), no writable executable memory
#     (PR_SET_MDWE), its UMask; SIGTERM (systemctl stop) ends both cleanly (exit 0).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"

BUILD=$(dirname "$SC_BIN")
ROOT="$TMP/root"
# the prefix the build was configured with (default /usr): the units name the programs by it
PREFIX=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")
[ -n "$PREFIX" ] || fail "no CMAKE_INSTALL_PREFIX in $BUILD/CMakeCache.txt"
U=${PREFIX#/}
DOC="$ROOT/$U/share/doc/schedcoord"
UNITS="$ROOT/$U/lib/systemd/system"
BINDIR="$ROOT/$U/bin"

# --- 1. the installed tree
DESTDIR="$ROOT" cmake --install "$BUILD" >"$TMP/install.log" 2>&1 ||
    fail "cmake --install failed: $(tail -5 "$TMP/install.log")"
for f in $U/bin/schedcoord-agent $U/bin/schedcoord-coordinator $U/bin/schedcoordctl \
    $U/lib/systemd/system/schedcoord-agent.service $U/lib/systemd/system/schedcoord-coordinator.service \
    $U/lib/systemd/system/schedcoord-metrics.socket $U/lib/systemd/system/schedcoord-metrics@.service \
    $U/share/doc/schedcoord/examples/schedcoord.conf \
    $U/share/doc/schedcoord/examples/hooks/prepare $U/share/doc/schedcoord/examples/hooks/recover \
    $U/share/doc/schedcoord/README.md $U/share/doc/schedcoord/docs/design.md \
    $U/share/doc/schedcoord/proto/README.md \
    $U/share/man/man1/schedcoord-agent.1 $U/share/man/man1/schedcoord-coordinator.1 \
    $U/share/man/man1/schedcoordctl.1 \
    $U/share/doc/schedcoord/examples/systemd/lb-drain-probe-file.conf \
    $U/share/doc/schedcoord/examples/systemd/lb-drain-iptables.conf \
    $U/share/doc/schedcoord/examples/systemd/kubernetes.conf \
    $U/share/doc/schedcoord/examples/systemd/pacemaker.conf \
    $U/share/doc/schedcoord/examples/systemd/other-user.conf \
    $U/share/doc/schedcoord/examples/systemd/jit.conf; do
    [ -f "$ROOT/$f" ] || fail "not installed: /$f"
done
for f in $U/bin/schedcoord-agent $U/bin/schedcoord-coordinator $U/bin/schedcoordctl \
    $U/share/doc/schedcoord/examples/hooks/prepare $U/share/doc/schedcoord/examples/hooks/recover; do
    [ -x "$ROOT/$f" ] || fail "installed but not executable: /$f"
done
HOOKDIR="$ROOT/$U/share/schedcoord/hooks"
[ -f "$HOOKDIR/hooklib.sh" ] || fail "not installed: /$U/share/schedcoord/hooks/hooklib.sh"
for h in chain kubernetes lb-drain pacemaker patroni wait-healthy; do
    [ -x "$HOOKDIR/$h" ] || fail "not installed, or not executable: /$U/share/schedcoord/hooks/$h"
done
ln -s "$HOOKDIR/wait-healthy" "$TMP/recover"
out=$(SCHEDCOORD_HOOKS_ENV=/dev/null SCHEDCOORD_HEALTH_CMD=true "$TMP/recover" 2>&1) ||
    fail "the installed wait-healthy, run as recover, failed: $out"
[ "$out" = "recover: healthy (true)" ] || fail "the installed wait-healthy said: $out"
ok "cmake --install: programs, units and their example drop-ins, example settings and hooks, man pages, documentation"

# --- 2. systemd's own check of the units (run from the installed tree)
UNIT_FILES="schedcoord-agent.service schedcoord-coordinator.service schedcoord-metrics.socket schedcoord-metrics@.service"
for u in $UNIT_FILES; do
    grep -q "^ExecStart=$PREFIX/bin/" "$UNITS/$u" || [ "${u%.socket}" != "$u" ] ||
        fail "$u does not run the programs from $PREFIX/bin: $(grep ExecStart "$UNITS/$u")"
done
# shellcheck disable=SC2086 # (the list of units)
if sc_verify_units "$UNITS" "$PREFIX" "$BINDIR" $UNIT_FILES; then
    ok "systemd-analyze verify: the four units are clean, their man pages found"
    # the agent's unit with each drop-in the README offers for what hooks need
    for d in "$DOC"/examples/systemd/*.conf; do
        w=$(mktemp -d "$TMP/dropin.XXXXXX")
        cp "$UNITS/schedcoord-agent.service" "$w/"
        mkdir "$w/schedcoord-agent.service.d"
        cp "$d" "$w/schedcoord-agent.service.d/"
        sc_verify_units "$w" "$PREFIX" "$BINDIR" schedcoord-agent.service
    done
    ok "systemd-analyze verify: the agent's unit with each example drop-in: $(cd "$DOC/examples/systemd" && echo *.conf)"
    if systemd-analyze security --help 2>/dev/null | grep -- --offline >/dev/null; then
        cp "$UNITS/schedcoord-metrics@.service" "$TMP/schedcoord-metrics@1.service"
        for u in schedcoord-agent.service:25 schedcoord-coordinator.service:20 "$TMP/schedcoord-metrics@1.service:15"; do
            f=${u%:*}
            [ "${f#/}" != "$f" ] || f="$UNITS/$f"
            out=$(systemd-analyze security --offline=true --threshold="${u##*:}" --no-pager "$f" 2>&1) ||
                fail "$(basename "$f") is exposed more than ${u##*:}/100: $(echo "$out" | grep '✗' | head -20; echo "$out" | tail -1)"
            echo "     $(echo "$out" | tail -1)"
        done
        ok "systemd-analyze security: the units stay hardened"
    fi
else
    echo "note: no systemd-analyze here; the units' syntax was not checked"
fi

# --help is complete: every flag its usage lines name has an entry of its own (what it does,
# its default); man pages, made from --help: every entry (a flag, a command) is in its page
for p in schedcoord-agent schedcoord-coordinator schedcoordctl; do
    page="$ROOT/$U/share/man/man1/$p.1"
    "$BINDIR/$p" --help >"$TMP/$p.help" || fail "$p --help exited $?"
    entries=$(sed -n 's/^  \([^ =[][^ =[]*\).*/\1/p' "$TMP/$p.help") # ("--until-idle[=S]": the flag)
    [ "$(echo "$entries" | wc -l)" -ge 4 ] || fail "$p --help lists too little: $entries"
    for f in $(sed '/^$/q' "$TMP/$p.help" | grep -oE -- '--[a-z0-9-]+[a-z0-9]' | sort -u); do
        grep -qxF -- "$f" <<<"$entries" || fail "$p --help names $f in its usage but has no entry for it"
    done
    for e in $entries; do
        grep -qF -- "\\fB${e//-/\\-}\\fR" "$page" || fail "$p.1 lacks $e, which $p --help lists"
    done
    if command -v groff >/dev/null; then
        w=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff $p.1: $w"
        [ -z "$w" ] || fail "groff warns about $p.1: $w"
    fi
done
ok "--help: every flag of the usage lines has its entry; man pages: each lists every entry of its program's --help$(command -v groff >/dev/null && echo ', and troff renders it without a warning')"

# --- 3. the Debian package
cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/pkg" >"$TMP/cpack.log" 2>&1 ||
    fail "cpack failed: $(tail -5 "$TMP/cpack.log")"
deb=$(ls "$TMP"/pkg/schedcoord_*.deb)
[ -f "$deb" ] || fail "no package: $(ls "$TMP/pkg")"
[ "$(dpkg-deb -f "$deb" Package)" = schedcoord ] || fail "package name: $(dpkg-deb -f "$deb" Package)"
dep=$(dpkg-deb -f "$deb" Depends)
for lib in libcurl4 libjson-c5 libzmq5 libsodium23 libsqlite3-0; do
    [[ "$dep" == *"$lib "* || "$dep" == *"$lib," || "$dep" == *"$lib" ]] || fail "the package does not depend on $lib: $dep"
done
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./||; /\/$/d' | sort >"$TMP/deb.files"
(cd "$ROOT" && find . -type f | sed 's|^\./||' | sort) >"$TMP/root.files"
diff "$TMP/root.files" "$TMP/deb.files" >"$TMP/files.diff" ||
    fail "the package and the installed tree differ: $(cat "$TMP/files.diff")"
ok "cpack: $(basename "$deb"), $(wc -l <"$TMP/deb.files") files as installed, Depends: $dep"

# --- 4. the units' ExecStart, from the installed tree, with the example settings: two VMs
# (each its agent and coordinator), each with its own copy of the one example file, changed
# only where an operator changes it (members) and where this machine is not Azure (each VM's
# IMDS has its own URL here, 169.254.169.254 there): no name, no key path per VM.
sc_sim_start --vms 2 --fault-domains 2 --time-scale 100 --complete-after 100 \
    --timeline "$TMP/timeline.jsonl"
read -r -a P <<<"$(free_ports 2)"
HOOKLOG="$TMP/hooks.log"
: >"$TMP/keyring"
for i in 0 1; do
    mkdir -p "$TMP/vm_$i/etc/schedcoord"
    "$BINDIR/schedcoordctl" keygen --name "vm_$i" --out "$TMP/vm_$i/etc/schedcoord" >>"$TMP/keyring" ||
        fail "keygen vm_$i"
done
for i in 0 1; do
    ETC="$TMP/vm_$i/etc/schedcoord"
    VAR="$TMP/vm_$i/var/lib/schedcoord"
    mkdir -p "$VAR/agent" "$VAR/coord"
    chmod 700 "$VAR/agent" "$VAR/coord" # StateDirectoryMode=0700
    cp "$TMP/keyring" "$ETC/keyring"
    # the operator's hooks: the examples, as /etc/schedcoord/prepare and recover would call them
    for h in prepare recover; do
        printf '#!/bin/sh\nSCHEDCOORD_DEMO_LOG=%s SCHEDCOORD_DEMO_SLEEP=0.3 exec %s\n' \
            "$HOOKLOG" "$DOC/examples/hooks/$h" >"$ETC/$h"
        chmod +x "$ETC/$h"
    done
    sed -e "s|^members = .*|members = vm_0=127.0.0.1:${P[0]},vm_1=127.0.0.1:${P[1]}|" \
        -e "s|^imds-url = .*|imds-url = $B/vm_$i|" \
        -e "s|/etc/schedcoord/|$TMP/etc/schedcoord/|g" "$DOC/examples/schedcoord.conf" >"$TMP/vm_$i.conf"
    # (paths point at a directory of the same name on each VM: /etc/schedcoord there)
    sed "s|$TMP/etc/schedcoord/|$ETC/|g" "$TMP/vm_$i.conf" >"$ETC/schedcoord.conf"
done
d=$(diff "$TMP/vm_0.conf" "$TMP/vm_1.conf" | grep '^[<>]' | grep -v '^[<>] imds-url = ' || true)
[ -z "$d" ] || fail "the VMs' settings differ beyond the IMDS URL: $d"

# sandboxed UNIT CMD...: execs CMD (same pid) with what of UNIT's sandbox a process can give
# itself (the rest — namespaces, the system call filter — takes systemd): NoNewPrivileges=,
# an empty CapabilityBoundingSet= (root without a capability), MemoryDenyWriteExecute= by
# PR_SET_MDWE (the kernel's, Linux 6.3+, which systemd 254+ uses), UMask=
MDWE_EXEC='import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, REFUSE_EXEC_GAIN
    sys.exit("PR_SET_MDWE: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])'
sandboxed() {
    local unit="$UNITS/$1.service" pre=()
    shift
    if grep -qx 'NoNewPrivileges=yes' "$unit" && command -v setpriv >/dev/null; then
        pre+=(setpriv --no-new-privs)
        if grep -qx 'CapabilityBoundingSet=' "$unit" && [ "$(id -u)" = 0 ]; then
            pre+=(--bounding-set=-all --inh-caps=-all)
        fi
        pre+=(--)
    fi
    if grep -qx 'MemoryDenyWriteExecute=yes' "$unit" && python3 -c "$MDWE_EXEC" /bin/true 2>/dev/null; then
        pre+=(python3 -c "$MDWE_EXEC")
    fi
    umask "$(sed -n 's/^UMask=//p' "$unit")"
    exec "${pre[@]}" "$@"
}

# ExecStart= of a unit, its paths mapped into vm_I's directories
exec_start() { # UNIT I
    sed -n 's/^ExecStart=//p' "$UNITS/$1.service" |
        sed -e "s|^$PREFIX/bin/|$BINDIR/|" -e "s|/etc/schedcoord/|$TMP/vm_$2/etc/schedcoord/|g" \
            -e "s|/var/lib/schedcoord/|$TMP/vm_$2/var/lib/schedcoord/|g"
}
DAEMONS=()
for i in 0 1; do
    read -r -a CO <<<"$(exec_start schedcoord-coordinator $i)"
    read -r -a AG <<<"$(exec_start schedcoord-agent $i)"
    [ "${CO[0]}" = "$BINDIR/schedcoord-coordinator" ] || fail "coordinator ExecStart: ${CO[*]}"
    [ "${AG[0]}" = "$BINDIR/schedcoord-agent" ] || fail "agent ExecStart: ${AG[*]}"
    sandboxed schedcoord-coordinator "${CO[@]}" 2>"$TMP/coord_$i.err" &
    DAEMONS+=("$!")
    PIDS+=("$!")
    sandboxed schedcoord-agent "${AG[@]}" 2>"$TMP/agent_$i.err" &
    DAEMONS+=("$!")
    PIDS+=("$!")
done
ctl() { "$BINDIR/schedcoordctl" --state-dir "$TMP/vm_0/var/lib/schedcoord/coord" "$@"; }
seen() { [ "$(ctl status --json 2>/dev/null | jq '[.members[] | select(.alive)] | length')" = 2 ]; }
sc_wait_until 20 seen || fail "the agents never reached vm_0's coordinator: $(tail -3 "$TMP"/*.err)"
for i in 0 1; do
    grep -q "msg=\"started\" name=vm_$i " "$TMP/coord_$i.err" ||
        fail "vm_$i's coordinator did not take its name from IMDS: $(head -5 "$TMP/coord_$i.err")"
done
[ "$(ctl status --json | jq -r .role)" = leader ] || fail "vm_0 does not lead"
[ "$("$BINDIR/schedcoordctl" --state-dir "$TMP/vm_1/var/lib/schedcoord/coord" status --json | jq -r .role)" = follower ] ||
    fail "vm_1 does not follow"
! grep -qi 'insecure' "$TMP"/*.err || fail "plain text, not CURVE: $(grep -i insecure "$TMP"/*.err)"
ok "two VMs from one example file (names from IMDS, keys by {name}): vm_0 leads, both agents report over CURVE"

E0=$(curl -sS -f -d '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":3000,"DurationInSeconds":30}' \
    "$B/control/events" | jq -r .EventId)
E1=$(curl -sS -f -d '{"EventType":"Reboot","Resources":["vm_1"],"NoticeSeconds":3000,"DurationInSeconds":30}' \
    "$B/control/events" | jq -r .EventId)
[ -n "$E0" ] && [ -n "$E1" ] || fail "events not created"
over() { [ "$(grep -c '"kind": *"completed"' "$TMP/timeline.jsonl")" -ge 2 ] && [ "$(grep -c 'recover done' "$HOOKLOG")" -ge 2 ]; }
sc_wait_until 40 over || fail "events not drained, approved and recovered: $(cat "$HOOKLOG") $(ctl events)"
for e in "$E0" "$E1"; do
    [ "$(jq -s "[.[] | select(.kind == \"post\" and .status == 200 and (.events | index(\"$e\")))] | length" "$TMP/timeline.jsonl")" -eq 1 ] ||
        fail "$e: expected one approval POST: $(jq -c 'select(.kind == "post")' "$TMP/timeline.jsonl")"
done
grep -q "prepare done  vm_0 Reboot $E0" "$HOOKLOG" && grep -q "prepare done  vm_1 Reboot $E1" "$HOOKLOG" ||
    fail "the example prepare hooks did not run for each VM: $(cat "$HOOKLOG")"
ok "an event per VM drained through the installed example hooks, approved once, recovered"
# what the daemons ran with
for p in "${DAEMONS[@]}"; do
    grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$p/status" || fail "pid $p runs with new privileges allowed"
    [ "$(id -u)" != 0 ] || grep -q '^CapBnd:[[:space:]]*0*$' "/proc/$p/status" ||
        fail "pid $p has a capability bounding set: $(grep CapBnd "/proc/$p/status")"
done
ok "the four daemons ran with no new privileges$([ "$(id -u)" = 0 ] && echo ', as root without a capability')$(python3 -c "$MDWE_EXEC" /bin/true 2>/dev/null && echo ', without writable executable memory (PR_SET_MDWE)')"

# systemctl stop: SIGTERM to the main process; every daemon exits 0
for p in "${DAEMONS[@]}"; do sc_stop daemon "$p" "$TMP/coord_0.err"; done
ok "SIGTERM: the four daemons exit 0"
