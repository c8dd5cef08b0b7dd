#!/usr/bin/env bash
# ./deploy/demo.sh, the README's first command, run as a newcomer would but without a terminal
# (on this suite's build directory, which it finds built): it runs to completion; the live
# view comes as plain lines (no escape code), fault domain after fault domain; the summary has
# one row per event (the 3 of the Reboot rollout and vm_4's Redeploy) with sane numbers —
# drained in about the hooks' 1 s, approved before NotBefore, down from the approval, recovered
# after — and the Azure-alone rows start at NotBefore, fault domain 0's with vm_4 (2 fault
# domains at once) where schedcoord had 1; then the leader's coordinator killed (kill -9): a new
# leader approves the next event, the old one started again follows; then where to
# look next; nothing left running.
# About 30 s alone; its bound (270 s, under ctest's 300) only catches a hang: beside the suite's
# other tests at -j3 on 2 cores it took 63 s, over 120 s once beside a real Patroni cluster, and
# over 180 s twice on a clean clone with a sanitizer build and a three-coordinator unit test
# running beside the suite (2026-11-28: the demo had reached its last step, the old leader's
# restart, each time).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

start=$(date +%s)
rc=0
SC_DEMO_BUILD=$(cd "$SC_BIN/.." && pwd) SC_DEMO_LO=$SC_LO \
    timeout 270 "$SC_SRC/deploy/demo.sh" </dev/null >"$TMP/demo.out" 2>"$TMP/demo.err" || rc=$?
took=$(($(date +%s) - start))
[ "$rc" -eq 0 ] || fail "demo.sh exited $rc after $took s: $(tail -n 20 "$TMP/demo.out" "$TMP/demo.err")"
ok "demo.sh ran to completion in $took s"

! grep -q $'\033' "$TMP/demo.out" || fail "escape codes without a terminal"
for fd in "0: draining vm_0 vm_3" "0: .*impacted" "1: .*impacted" "2: .*impacted" "2: healthy vm_2 vm_5"; do
    grep -qE "^[0-9:]{8} FD $fd" "$TMP/demo.out" || fail "live view: no line FD $fd: $(cat "$TMP/demo.out")"
done
ok "live view: plain lines, one per change"

python3 - "$TMP/demo.out" <<'PY' || fail "summary: $(sed -n '/== summary/,$p' "$TMP/demo.out")"
import re, sys
text = open(sys.argv[1]).read()
summary = text[text.index("== summary"):]

def table(head):  # the rows (lists of cells) of the table whose header line holds head
    i = summary.index(head)
    lines = summary[summary.rfind("\n", 0, i) + 1:].split("\n")
    cols = [m.start() for m in re.finditer(r"\S+(?: \S+)*", lines[0])]
    if cols[0] > 0:  # a header without a name over its first column
        cols.insert(0, 0)
    rows = []
    for l in lines[1:]:
        if not l.strip():
            break
        rows.append([l[a:b].strip() for a, b in zip(cols, cols[1:] + [None])])
    return rows

num = lambda s: float(re.match(r"[+]?(-?[\d.]+)", s).group(1))
ev = table("NOTBEFORE")
assert len(ev) == 4, ev
assert sorted(r[1] for r in ev) == ["Reboot", "Reboot", "Reboot", "Redeploy"], ev
by_vms = {r[2]: r for r in ev}
assert set(by_vms) == {"vm_0 vm_3 (FD 0)", "vm_1 vm_4 (FD 1)", "vm_2 vm_5 (FD 2)", "vm_4 (FD 1)"}, ev
for e, typ, vms, notice, nb, drain, approved, down, rec in ev:
    n, b = num(notice), num(nb)
    assert 14 <= b - n <= 17, f"{e}: notice {n}, NotBefore {b}: not 15 min at x60"
    assert 0.5 <= num(drain) <= 8, f"{e}: drain {drain}"
    a = num(approved)
    m = re.search(r"\(([\d.]+) s early\)", approved)
    assert m and n < a < b and abs(b - a - float(m.group(1))) < 0.15, f"{e}: approved {approved}"
    d0, d1 = (num(x) for x in down.split(".."))
    assert abs(d0 - a) < 0.5 and d0 < d1 <= d0 + 3, f"{e}: down {down}, approved {a}"
    assert d1 < num(rec) < d1 + 10, f"{e}: recovered {rec} after down {down}"
# both made at the start (one after the other: a busy machine may part them by a tenth)
assert num(by_vms["vm_0 vm_3 (FD 0)"][3]) == 0.0 and 0.0 <= num(by_vms["vm_4 (FD 1)"][3]) <= 0.5, ev
# fault domains one at a time: FD 0 recovered before FD 1 went down, FD 1 before FD 2
order = ["vm_0 vm_3 (FD 0)", "vm_4 (FD 1)", "vm_1 vm_4 (FD 1)", "vm_2 vm_5 (FD 2)"]
assert num(by_vms[order[0]][8]) <= num(by_vms[order[1]][7].split("..")[0]) + 0.2
assert num(by_vms[order[2]][8]) <= num(by_vms[order[3]][7].split("..")[0]) + 0.2

alone = {r[0]: r for r in table("DOWN TOGETHER")}
assert len(alone) == 4, alone
for e, typ, vms, notice, nb, *_ in ev:
    a = alone[e]
    assert num(a[2]) >= num(nb) - 0.05, f"{e}: Azure alone starts {a[2]} before NotBefore {nb}"
    if vms in ("vm_0 vm_3 (FD 0)", "vm_4 (FD 1)"):
        assert abs(num(a[2]) - num(nb)) < 0.05, a
        assert a[4] == "vm_0 vm_3 vm_4 (FD 0,1): 2 fault domains at once", a
    else:
        assert "at once" not in a[4], a

tot = {r[0]: r for r in table("ALL DONE")}
ours, azure = tot["with schedcoord"], tot["Azure alone"]
assert ours[2] == "4 (one per event)" and ours[3] == "7 of 7" and ours[4] == "1", ours
assert azure[3] == "0 of 7" and azure[4].startswith("2 (vm_0 vm_3 vm_4 at"), azure
assert num(azure[1]) > 2 * num(ours[1]) > 0, (ours, azure)
print("summary: 4 events;", ours, azure)
PY
ok "summary: one row per event, sane numbers, beside what Azure alone would have done"

kill=$(sed -n '/== kill the leader/,/== where to look next/p' "$TMP/demo.out")
ms=$(sed -n 's/^vm_[0-9] leads after \([0-9]*\) ms.*/\1/p' <<<"$kill")
# how fast is the failover bench's to say (tests/bench/failover.sh); here, that it happened
[ -n "$ms" ] || fail "kill the leader: no new leader: $kill"
grep -qE '^  term [0-9]+  approval_intent +approve: ' <<<"$kill" && grep -qE "^vm_[0-9]'s coordinator started again: it follows vm_[0-9]" <<<"$kill" ||
    fail "kill the leader: the new leader did not approve vm_5's Reboot, or the old one does not follow: $kill"
ok "kill the leader: a new leader in $ms ms approves the next event; the old one, back, follows"
next=$(sed -n '/== where to look next/,$p' "$TMP/demo.out")
for w in "status" "watch" "history" "metrics" "hook log" "README.md" "SC_DEMO_KEEP=1"; do
    grep -qF -- "$w" <<<"$next" || fail "where to look next: no $w: $next"
done
ok "where to look next: schedcoordctl status/watch/history/metrics, the hooks, the README"

! pgrep -f -- "$SC_LO" >/dev/null || fail "left running: $(pgrep -af -- "$SC_LO")"
ok "nothing left running"
