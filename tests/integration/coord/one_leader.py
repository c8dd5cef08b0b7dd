#!/usr/bin/env python3
"""At most one coordinator acting as leader at any moment, from their logs.

Each coordinator logs msg="may act" value=true|false on every change of its permission to act
(order, approve). From each log (its file's stem names the member) this builds the intervals in
which it could act: from a value=true line to the next value=false line, or to its process's
death: a line "NAME UNIX_SECONDS" in --killed, or the end of its log when it stopped cleanly
(a clean stop logs "stopped"). Two intervals of two members that overlap are a violation.
Prints one line per violation, then a summary; exits 1 when there is one."""
import argparse
import datetime
import os
import re
import sys

LINE = re.compile(r'^(\S+) schedcoord-coordinator .*msg="(may act|stopped)"(?: value=(true|false))?')


def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def intervals(path, killed):
    out, start, name = [], None, os.path.basename(path).split(".")[0]
    for line in open(path, errors="replace"):
        m = LINE.match(line)
        if not m:
            continue
        t = ts(m.group(1))
        for k in killed.get(name, []):  # a death before this line ends what was open
            if start is not None and start <= k <= t:
                out.append((start, k))
                start = None
        if m.group(2) == "may act" and m.group(3) == "true" and start is None:
            start = t
        elif start is not None and (m.group(2) == "stopped" or m.group(3) == "false"):
            out.append((start, t))
            start = None
    if start is not None:
        ends = [k for k in killed.get(name, []) if k >= start]
        out.append((start, min(ends) if ends else float("inf")))
    return name, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--killed", default="")
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args()
    killed = {}
    if a.killed and os.path.exists(a.killed):
        for line in open(a.killed):
            if line.strip():
                n, t = line.split()
                killed.setdefault("coord" if n == "vm_0" else "coord_" + n[3:], []).append(float(t))
    spans = [intervals(p, killed) for p in a.logs if p.endswith(".err")]
    bad = 0
    for i in range(len(spans)):
        for j in range(i + 1, len(spans)):
            for s0, e0 in spans[i][1]:
                for s1, e1 in spans[j][1]:
                    if s0 < e1 and s1 < e0:
                        bad += 1
                        print(f"one leader: {spans[i][0]} [{s0:.3f}, {e0:.3f}] and "
                              f"{spans[j][0]} [{s1:.3f}, {e1:.3f}] both may act")
    n = sum(len(s) for _, s in spans)
    print(f"one leader: {n} acting intervals over {len(spans)} coordinators, {bad} overlaps")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
