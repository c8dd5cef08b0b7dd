# Shared helpers of the shell tests, sourced by tests/imds-sim/testlib.sh,
# tests/peer/agent_testlib.sh, tests/integration/coord/lib.sh and the standalone fault_*.sh.
#
# Sets SC_BIN (and BIN, the same), SC_SRC, TMP (a fresh $SC_TMP, or a new temporary dir),
# drops proxy settings (everything is on loopback), and on exit kills what was started and
# registered in PIDS. A lib may define sc_on_fail (more to print when a test fails; its
# output goes to stderr) and sc_on_exit (more to stop on exit, run before PIDS are killed).
set -euo pipefail
SC_BIN="${SC_BIN:-build/bin}"
BIN="$SC_BIN"
SC_SRC="${SC_SRC:-.}"
TMP="${SC_TMP:-$(mktemp -d)}"
rm -rf "$TMP"
mkdir -p "$TMP"
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY
export NO_PROXY='*' no_proxy='*'
PIDS=()
SIM_PID=""

fail() {
    echo "FAIL: $*" >&2
    if declare -F sc_on_fail >/dev/null; then sc_on_fail >&2 || true; fi
    exit 1
}
ok() { echo "ok   $*"; }

# sc_check_logfmt FILE...: every sc_log line in the files is one well-formed logfmt record
# (outside text escaped: tests/lib/logfmt_check.py); fails the test naming the bad lines
sc_check_logfmt() {
    local out
    out=$(python3 "$SC_SRC/tests/lib/logfmt_check.py" "$@") || fail "log lines that are not one logfmt record: $out"
    echo "$out" | tail -n 1
}

# sc_kill PID...: SIGTERM to each (empty ones skipped), then reap them
sc_kill() {
    local p
    for p in "$@"; do [ -z "$p" ] || kill "$p" 2>/dev/null || true; done
    for p in "$@"; do [ -z "$p" ] || wait "$p" 2>/dev/null || true; done
}

# sc_untrack PID: PID is no longer in PIDS (it was stopped and reaped)
sc_untrack() {
    local p keep=()
    for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}

# sc_stop NAME PID [LOG]: SIGTERM, and the exit status must be 0 (clean, no sanitizer
# report); otherwise the test fails, quoting the tail of LOG when given
sc_stop() {
    local name=$1 pid=$2 log=${3:-} rc=0
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || true
    wait "$pid" || rc=$?
    sc_untrack "$pid"
    [ "$rc" -eq 0 ] || fail "$name exited with $rc${log:+: $(tail -20 "$log")}"
}

sc_cleanup() {
    if declare -F sc_on_exit >/dev/null; then sc_on_exit || true; fi
    sc_kill "${PIDS[@]}"
}
trap sc_cleanup EXIT

# sc_wait_until SECONDS CMD...: runs CMD every 0.1 s until it succeeds (0), or 1 after SECONDS
# (whole seconds; a fraction is dropped). The programs CMD runs skip LeakSanitizer's check at
# their exit: a poll runs schedcoordctl every 0.1 s for up to minutes, and the check cost
# more than half of each run (170 ms of CPU a run, 90 without it, 2026-11-28, on the 2 cores the
# suite's tests share); every other run of the same program is checked. The clock is bash's
# own (no date process per turn).
sc_wait_until() {
    local t=$1 now
    shift
    now=${EPOCHREALTIME/./}
    local end=$((now / 1000 + ${t%.*} * 1000))
    until ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$@"; do
        now=${EPOCHREALTIME/./}
        [ $((now / 1000)) -lt $end ] || return 1
        sleep 0.1
    done
}

# SC_LO: this test's own loopback address (127.X.Y.Z, random), for endpoints that another
# program may connect to before, or without, anything of this test listening there: the
# members' coordinator endpoints (agents connect to every member, started or not). Chosen on
# 127.0.0.1, a free port of this test is free for every test running at the same time (ctest
# -j2, a second copy of the suite), which may pick it for a coordinator of its own and then
# get this test's agents (--insecure, the same member names) as its members.
SC_LO="127.$((RANDOM % 254 + 1)).$((RANDOM % 256)).$((RANDOM % 254 + 1))"

# free_ports N [ADDR] -> N free TCP ports on ADDR (default 127.0.0.1)
free_ports() {
    python3 - "$1" "${2:-127.0.0.1}" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind((sys.argv[2], 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

sc_sim_listening() {
    grep -q '^listening on ' "$TMP/sim.out" && return 0
    kill -0 "$SIM_PID" 2>/dev/null || fail "imds-sim exited at start: $(tail -3 "$TMP/sim.err")"
    return 1
}

# sc_sim_start ARGS...: imds-sim on an ephemeral loopback port (--listen 127.0.0.1:0; it prints
# the port), output in $TMP/sim.out and sim.err -> SIM_PID (in PIDS), PORT, B (base URL)
sc_sim_start() {
    "$SC_BIN/imds-sim" --listen 127.0.0.1:0 "$@" >"$TMP/sim.out" 2>>"$TMP/sim.err" &
    SIM_PID=$!
    PIDS+=("$SIM_PID")
    sc_wait_until 10 sc_sim_listening || fail "imds-sim did not start: $(tail -3 "$TMP/sim.err")"
    PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/sim.out" | head -1)
    [ -n "$PORT" ] || fail "imds-sim printed no port"
    B="http://127.0.0.1:$PORT"
}

# sc_sim_stop: stops imds-sim; it must exit 0
sc_sim_stop() {
    sc_stop imds-sim "$SIM_PID" "$TMP/sim.err"
    SIM_PID=""
}

# sc_verify_units DIR PREFIX BINDIR UNIT...: `systemd-analyze verify` of the units of DIR,
# their ExecStart= moved from PREFIX/bin to BINDIR (verify wants the programs to exist; a
# template NAME@.service is checked through its instance NAME@1.service), with their drop-ins
# (DIR/UNIT.d/*.conf) and their Documentation=man: pages, looked for in BINDIR/../share/man
# (the installed tree's; not checked where there is no man). Fails the test on any complaint;
# returns 1 when there is no systemd-analyze here.
sc_verify_units() {
    local dir=$1 prefix=$2 bindir=$3 u out v files=() man=(--man=no)
    shift 3
    command -v systemd-analyze >/dev/null || return 1
    ! command -v man >/dev/null || man=()
    v=$(mktemp -d "$TMP/verify.XXXXXX")
    for u in "$@"; do
        sed "s|^ExecStart=$prefix/bin/|ExecStart=$bindir/|" "$dir/$u" >"$v/$u"
        [ ! -d "$dir/$u.d" ] || cp -r "$dir/$u.d" "$v/"
        [ "${u/@./@1.}" = "$u" ] || cp "$v/$u" "$v/${u/@./@1.}"
        files+=("$v/${u/@./@1.}")
    done
    out=$(cd "$v" && MANPATH="$bindir/../share/man" systemd-analyze verify "${man[@]}" "${files[@]}" 2>&1) ||
        fail "systemd-analyze verify: $out"
    [ -z "$out" ] || fail "systemd-analyze verify complains: $out"
}
