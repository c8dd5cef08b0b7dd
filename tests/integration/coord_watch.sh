#!/usr/bin/env bash
# schedcoordctl watch against a coordinator in a Reboot rollout (6 VMs, 3 fault domains, FD 0
# held in its prepare hooks while the test looks):
#  - --once --plain: the grid has one column per fault domain with that domain's VMs and each
#    VM's state as status --json gives it at the same moment, and the open event with its
#    NotBefore countdown; no escape code;
#  - plain mode (stdout a file) from before the rollout to its end: the whole picture first,
#    then a line only for what changed (no line repeated for a fault domain or an event), each
#    fault domain healthy -> draining -> impacted -> healthy, each event Scheduled -> Started ->
#    completed; SIGTERM ends it (exit 0);
#  - --until-idle exits by itself once the rollout is over;
#  - on a terminal (a pty): the frame redrawn in place with colors, the cursor hidden and shown
#    again at Ctrl-C (exit 0); with TERM=dumb, plain lines.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
prepare_hold 0
prepare_hold 3
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen: $(ctl status --json | jq -c .members)"

# (not through ctl, a function: $! must be schedcoordctl itself, which the signals are for)
"$SC_BIN/schedcoordctl" --state-dir "$TMP/coord" watch --interval 0.2 >"$TMP/plain.out" \
    2>"$TMP/plain.err" &
WATCH=$!
PIDS+=("$WATCH")
wait_for 10 grep -q 'FD 2: healthy vm_2 vm_5$' "$TMP/plain.out" ||
    fail "plain watch shows no set: $(cat "$TMP/plain.out" "$TMP/plain.err")"

curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
fd0_draining() { member_is vm_0 draining && member_is vm_3 draining; }
wait_for 20 fd0_draining || fail "FD 0 not draining: $(ctl status)"
"$SC_BIN/schedcoordctl" --state-dir "$TMP/coord" watch --plain --interval 0.2 --until-idle=1 \
    >"$TMP/idle.out" 2>&1 &
IDLE=$!
PIDS+=("$IDLE")

# The grid against status --json, both while FD 0's prepares are held (nothing moves).
ctl watch --once --plain >"$TMP/once.txt" || fail "watch --once failed"
ctl status --json >"$TMP/status.json"
python3 - "$TMP/once.txt" "$TMP/status.json" <<'PY' || fail "grid differs from status --json: $(cat "$TMP/once.txt")"
import json, re, sys
text = open(sys.argv[1]).read()
st = json.load(open(sys.argv[2]))
assert "\033" not in text, "escape codes in --plain output"
lines = text.split("\n")
head = next(i for i, l in enumerate(lines) if l.startswith("FD "))
cols = [(m.start(), int(m.group(1))) for m in re.finditer(r"FD (\d+)", lines[head])]
grid = {}
for row in lines[head + 1:]:
    if not row.strip():
        break
    for m in re.finditer(r"(vm_\d+) (\w+)", row):
        fd = [f for start, f in cols if start == m.start()]
        assert fd, f"cell {m.group(0)!r} under no fault domain column: {row!r}"
        grid[m.group(1)] = (fd[0], m.group(2))
want = {m["name"]: (m["fault_domain"], m["state"]) for m in st["members"]}
assert sorted(f for _, f in cols) == sorted({f for f, _ in want.values()}), cols
assert grid == want, f"grid {grid} != status {want}"
ev = [e for e in st["events"] if e["ended_ms"] is None]
assert len(ev) == 1 and ev[0]["status"] == "Scheduled", ev
row = next(l for l in lines if l.startswith(ev[0]["EventId"][:8]))
assert re.search(r"Reboot +vm_0 vm_3 \(FD 0\) +Scheduled +none +NotBefore in \d+ min \d+ s$", row), row
print("grid == status --json:", sorted(grid.items()))
PY
ok "watch --once --plain: the grid (FDs, VMs, states) and the event as status --json has them"

# On a terminal: redrawn in place, colors, the cursor back after Ctrl-C. TERM=dumb: plain.
pty_run() { # TERM SECONDS: watch on a pty for SECONDS, then SIGINT; prints rc and output (repr)
    TERM=$1 python3 - "$SC_BIN/schedcoordctl" "$TMP/coord" "$2" <<'PY'
import os, pty, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "--state-dir", sys.argv[2], "watch", "--interval", "0.2"])
out, end = b"", time.time() + float(sys.argv[3])
def drain(until):
    global out
    while time.time() < until:
        try:
            out += os.read(fd, 65536)
        except OSError:
            break
os.set_blocking(fd, False)
while time.time() < end:
    drain(time.time() + 0.05)
    time.sleep(0.05)
os.kill(pid, signal.SIGINT)
os.set_blocking(fd, True)
drain(time.time() + 5)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
print(repr(out.decode()))
PY
}
pty_run xterm 1.5 >"$TMP/tty.out"
python3 - "$TMP/tty.out" <<'PY' || fail "watch on a terminal: $(cat "$TMP/tty.out")"
import ast, re, sys
rc, out = open(sys.argv[1]).read().split("\n", 1)
out = ast.literal_eval(out.strip())
assert rc == "0", f"exit {rc}"
assert out.startswith("\033[?25l"), "cursor not hidden first"
assert out.rstrip("\r\n").endswith("\033[?25h"), "cursor not shown again at the end"
assert len(re.findall(r"\r\033\[\d+A", out)) >= 3, "not redrawn in place"
assert "\033[33mdraining\033[0m" in out and "FD 0" in out, "no colored grid"
assert "NotBefore in" in out
PY
pty_run dumb 0.6 >"$TMP/dumb.out"
grep -q '^0$' "$TMP/dumb.out" || fail "TERM=dumb: $(cat "$TMP/dumb.out")"
! grep -q '\\x1b' "$TMP/dumb.out" || fail "TERM=dumb: escape codes: $(cat "$TMP/dumb.out")"
grep -q 'FD 0: draining vm_0 vm_3' "$TMP/dumb.out" || fail "TERM=dumb: no plain lines: $(cat "$TMP/dumb.out")"
ok "on a terminal: redrawn in place, colored, cursor restored at Ctrl-C; TERM=dumb: plain lines"

prepare_release 0
prepare_release 3
wait_for 90 completed_ge 3 || fail "rollout not complete: $(ctl status)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
wait_for 15 eval '! kill -0 "$IDLE"' || fail "--until-idle still running after the rollout"
rc=0
wait "$IDLE" || rc=$?
sc_untrack "$IDLE"
[ "$rc" -eq 0 ] || fail "--until-idle exited $rc: $(cat "$TMP/idle.out")"
[ "$(grep -c ': completed$' "$TMP/idle.out")" -eq 3 ] || fail "--until-idle: $(cat "$TMP/idle.out")"
ok "--until-idle: exited by itself once the rollout was over (3 events completed)"

sleep 0.5 # a last look at the set healthy again
rc=0
kill -TERM "$WATCH"
wait "$WATCH" || rc=$?
sc_untrack "$WATCH"
[ "$rc" -eq 0 ] || fail "plain watch exited $rc on SIGTERM"
python3 - "$TMP/plain.out" <<'PY' || fail "plain lines: $(cat "$TMP/plain.out")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
last, by = {}, {}
for l in lines:
    m = re.match(r"\d\d:\d\d:\d\d (leader |FD (\d+): |event ([0-9a-f]{8}) )", l)
    assert m, f"not a plain line: {l!r}"
    key = m.group(2) or m.group(3) or "leader"
    text = re.sub(r"^\S+ ", "", l)
    text = re.sub(r" \((in|\d+ \w+ ago)[^)]*\)", "", text)  # the countdown does not count
    assert last.get(key) != text, f"line repeated, nothing changed: {l!r}"
    last[key] = text
    by.setdefault(key, []).append(text)
for fd, vms in (("0", "vm_0 vm_3"), ("1", "vm_1 vm_4"), ("2", "vm_2 vm_5")):
    seq = by[fd]
    assert seq[0] == f"FD {fd}: healthy {vms}" and seq[-1] == seq[0], seq
    d = seq.index(f"FD {fd}: draining {vms}")
    i = seq.index(f"FD {fd}: impacted {vms}")
    assert d < i, seq
events = [k for k in by if k not in ("0", "1", "2", "leader")]
assert len(events) == 3, events
for e in events:
    seq = by[e]
    s = next(i for i, t in enumerate(seq) if ": Scheduled, approval none, NotBefore" in t)
    a = next(i for i, t in enumerate(seq) if ": Started, approval approved" in t)
    c = next(i for i, t in enumerate(seq) if t.endswith(": completed"))
    assert s < a < c, seq
print(f"{len(lines)} plain lines, one per change")
PY
ok "plain mode: the picture, then one line per change, FD by FD and event by event"
