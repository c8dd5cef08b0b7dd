#!/usr/bin/env bash
# The installed tree and the Debian package, as an operator gets them:
#  1. `cmake --install` puts the three programs, the systemd units, the example settings,
#     hooks and documentation where the README says;
#  2. the units pass `systemd-analyze verify` (no unknown key, no bad value);
#  3. `cpack -G DEB` builds a package holding the same files, depending on the Debian
#     packages of the four libraries;
#  4. the units' own ExecStart lines, run from the installed tree with the installed example
#     settings (only the set's addresses, keys and paths changed, as an operator would), bring
#     up a coordinator and an agent over CURVE that drain and approve an event through the
#     installed example hooks; SIGTERM (systemctl stop) ends both cleanly (exit 0).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"

BUILD=$(dirname "$SC_BIN")
ROOT="$TMP/root"
DOC="$ROOT/usr/share/doc/schedcoord"
UNITS="$ROOT/usr/lib/systemd/system"

# --- 1. the installed tree
DESTDIR="$ROOT" cmake --install "$BUILD" --prefix /usr >"$TMP/install.log" 2>&1 ||
    fail "cmake --install failed: $(tail -5 "$TMP/install.log")"
for f in usr/bin/schedcoord-agent usr/bin/schedcoord-coordinator usr/bin/schedcoordctl \
    usr/lib/systemd/system/schedcoord-agent.service usr/lib/systemd/system/schedcoord-coordinator.service \
    usr/lib/systemd/system/schedcoord-metrics.socket usr/lib/systemd/system/schedcoord-metrics@.service \
    usr/share/doc/schedcoord/examples/agent.conf usr/share/doc/schedcoord/examples/coordinator.conf \
    usr/share/doc/schedcoord/examples/hooks/prepare usr/share/doc/schedcoord/examples/hooks/recover \
    usr/share/doc/schedcoord/README.md usr/share/doc/schedcoord/docs/design.md \
    usr/share/doc/schedcoord/proto/README.md; do
    [ -f "$ROOT/$f" ] || fail "not installed: /$f"
done
for f in usr/bin/schedcoord-agent usr/bin/schedcoord-coordinator usr/bin/schedcoordctl \
    usr/share/doc/schedcoord/examples/hooks/prepare usr/share/doc/schedcoord/examples/hooks/recover; do
    [ -x "$ROOT/$f" ] || fail "installed but not executable: /$f"
done
ok "cmake --install: programs, units, example settings and hooks, documentation"

# --- 2. systemd's own check of the units (ExecStart pointed at the installed tree: verify
# wants the program to exist)
mkdir -p "$TMP/verify"
UNIT_FILES="schedcoord-agent.service schedcoord-coordinator.service schedcoord-metrics.socket schedcoord-metrics@.service"
for u in $UNIT_FILES; do
    sed "s|^ExecStart=/usr/bin/|ExecStart=$ROOT/usr/bin/|" "$UNITS/$u" >"$TMP/verify/$u"
done
if command -v systemd-analyze >/dev/null; then
    # (the template through an instance of it: verify loads the socket's service so)
    cp "$TMP/verify/schedcoord-metrics@.service" "$TMP/verify/schedcoord-metrics@1.service"
    out=$(cd "$TMP/verify" && systemd-analyze verify "$TMP/verify/schedcoord-agent.service" \
        "$TMP/verify/schedcoord-coordinator.service" "$TMP/verify/schedcoord-metrics.socket" \
        "$TMP/verify/schedcoord-metrics@1.service" 2>&1) || fail "systemd-analyze verify: $out"
    [ -z "$out" ] || fail "systemd-analyze verify complains: $out"
    ok "systemd-analyze verify: the four units are clean"
else
    echo "note: no systemd-analyze here; the units' syntax was not checked"
fi

# --- 3. the Debian package
cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/pkg" >"$TMP/cpack.log" 2>&1 ||
    fail "cpack failed: $(tail -5 "$TMP/cpack.log")"
deb=$(ls "$TMP"/pkg/schedcoord_*.deb)
[ -f "$deb" ] || fail "no package: $(ls "$TMP/pkg")"
[ "$(dpkg-deb -f "$deb" Package)" = schedcoord ] || fail "package name: $(dpkg-deb -f "$deb" Package)"
dep=$(dpkg-deb -f "$deb" Depends)
for lib in libcurl4 libjson-c5 libzmq5 libsqlite3-0; do
    [[ "$dep" == *"$lib "* || "$dep" == *"$lib," || "$dep" == *"$lib" ]] || fail "the package does not depend on $lib: $dep"
done
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./||; /\/$/d' | sort >"$TMP/deb.files"
(cd "$ROOT" && find . -type f | sed 's|^\./||' | sort) >"$TMP/root.files"
diff "$TMP/root.files" "$TMP/deb.files" >"$TMP/files.diff" ||
    fail "the package and the installed tree differ: $(cat "$TMP/files.diff")"
ok "cpack: $(basename "$deb"), $(wc -l <"$TMP/deb.files") files as installed, Depends: $dep"

# --- 4. the units' ExecStart, from the installed tree, with the example settings
sc_sim_start --vms 1 --fault-domains 1 --time-scale 100 --complete-after 100 \
    --timeline "$TMP/timeline.jsonl"
ETC="$TMP/etc/schedcoord"
VAR="$TMP/var/lib/schedcoord"
mkdir -p "$ETC" "$VAR/agent" "$VAR/coord"
chmod 700 "$VAR/agent" "$VAR/coord" # StateDirectoryMode=0700
"$ROOT/usr/bin/schedcoordctl" keygen --name vm_0 --out "$ETC" >"$ETC/keyring" || fail "keygen"
read -r P <<<"$(free_ports 1)"
# the operator's hooks: the examples, as /etc/schedcoord/prepare and recover would call them
HOOKLOG="$TMP/hooks.log"
for h in prepare recover; do
    printf '#!/bin/sh\nSCHEDCOORD_DEMO_LOG=%s SCHEDCOORD_DEMO_SLEEP=0.3 exec %s\n' \
        "$HOOKLOG" "$DOC/examples/hooks/$h" >"$ETC/$h"
    chmod +x "$ETC/$h"
done
# the example settings with this set's values: members, IMDS, paths under $TMP
for c in agent coordinator; do
    sed -e "s|^members = .*|members = vm_0=127.0.0.1:$P|" \
        -e "s|^imds-url = .*|imds-url = $B/vm_0|" \
        -e "s|/etc/schedcoord/|$ETC/|g" "$DOC/examples/$c.conf" >"$ETC/$c.conf"
done
grep -q "^name = vm_0$" "$ETC/coordinator.conf" || fail "the coordinator example has no name line"

# ExecStart= of a unit, its paths mapped into $TMP
exec_start() {
    sed -n 's/^ExecStart=//p' "$UNITS/$1.service" |
        sed -e "s|/usr/bin/|$ROOT/usr/bin/|" -e "s|/etc/schedcoord/|$ETC/|g" -e "s|/var/lib/schedcoord/|$VAR/|g"
}
read -r -a CO <<<"$(exec_start schedcoord-coordinator)"
read -r -a AG <<<"$(exec_start schedcoord-agent)"
[ "${CO[0]}" = "$ROOT/usr/bin/schedcoord-coordinator" ] || fail "coordinator ExecStart: ${CO[*]}"
[ "${AG[0]}" = "$ROOT/usr/bin/schedcoord-agent" ] || fail "agent ExecStart: ${AG[*]}"
"${CO[@]}" 2>"$TMP/coord.err" &
CPID=$!
PIDS+=("$CPID")
"${AG[@]}" 2>"$TMP/agent.err" &
APID=$!
PIDS+=("$APID")
ctl() { "$ROOT/usr/bin/schedcoordctl" --state-dir "$VAR/coord" "$@"; }
seen() { [ "$(ctl status --json 2>/dev/null | jq '[.members[] | select(.alive)] | length')" = 1 ]; }
sc_wait_until 20 seen || fail "the agent never reached the coordinator: $(tail -5 "$TMP/coord.err") / $(tail -5 "$TMP/agent.err")"
! grep -qi 'insecure' "$TMP/coord.err" "$TMP/agent.err" || fail "plain text, not CURVE: $(grep -i insecure "$TMP"/*.err)"
ok "ExecStart of both units, example settings: the agent reports to the coordinator over CURVE"

EV=$(curl -sS -f -d '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":3000,"DurationInSeconds":30}' \
    "$B/control/events" | jq -r .EventId)
[ -n "$EV" ] && [ "$EV" != null ] || fail "event not created"
done_ev() { grep -q "\"kind\": *\"completed\".*$EV" "$TMP/timeline.jsonl" && grep -q "recover done .*$EV" "$HOOKLOG"; }
sc_wait_until 30 done_ev || fail "event not drained, approved and recovered: $(cat "$HOOKLOG") $(ctl events)"
[ "$(jq -s "[.[] | select(.kind == \"post\" and .status == 200)] | length" "$TMP/timeline.jsonl")" -eq 1 ] ||
    fail "expected one approval POST: $(jq -c 'select(.kind == "post")' "$TMP/timeline.jsonl")"
grep -q "prepare done .*$EV" "$HOOKLOG" || fail "the example prepare hook did not run: $(cat "$HOOKLOG")"
ok "an event drained through the installed example hooks, approved once, recovered"

# systemctl stop: SIGTERM to the main process; both exit 0
sc_stop schedcoord-agent "$APID" "$TMP/agent.err"
sc_stop schedcoord-coordinator "$CPID" "$TMP/coord.err"
ok "SIGTERM: both daemons exit 0"
