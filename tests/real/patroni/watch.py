#!/usr/bin/env python3
"""Patroni seen from outside, for tests/real/real_patroni.sh and tests/bench/patroni_rollout.sh.

  watch.py watch --api NAME=URL... --out FILE [--every S]
      every S seconds, asks every member at once (threads) for GET /patroni and GET /cluster;
      one JSON line per round: {"t": unix, "m": {NAME: {"state", "role", "cluster": [[name,
      role, state, lag], ...] or null}}}. Until SIGTERM.
  watch.py probe --api NAME=URL... --vm NAME --at impact|prepare --out FILE
      one round, as above, with "vm": NAME and "at": the VM's impact begins now (imds-sim's
      --on-impact), or its prepare hook starts now (the agent's hook, before the hook under
      test); appended to FILE.
  watch.py report --rounds FILE --probes FILE --writer FILE --rows FILE [--streaming-after]
      checks and figures (JSON on stdout; exit 1 naming each violation on stderr):
      - no split brain: no round in which two members run PostgreSQL as a primary (state
        running, role master/primary), nor a /cluster answer naming two leaders;
      - at each impact's beginning (probes): the VM impacted is not the leader in any
        member's /cluster and its PostgreSQL is not a running primary;
      - (--streaming-after) at each prepare's start (the next domain starts), every VM
        impacted before is back: it leads, or runs, in /cluster with a numeric lag within
        1 MB, and streams (the leader's replication list);
      - every row whose COMMIT returned (writer log "ok N") is in the rows file (one N a line);
      figures: rows committed, failed attempts, lost rows, the longest and the total time
      without a successful write (between two "ok" lines more than 0.5 s apart, gaps of the
      writer's own lateness included)."""
import argparse
import json
import signal
import sys
import threading
import time
import urllib.request

MAX_LAG = 1 << 20


def get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.loads(r.read().decode())
    except urllib.error.HTTPError as e:  # (503 still carries the JSON)
        try:
            return json.loads(e.read().decode())
        except ValueError:
            return None
    except Exception:
        return None


def member(url):
    p = get(url + "/patroni") or {}
    c = get(url + "/cluster")
    out = {"state": p.get("state"), "role": p.get("role"),
           "replication": [[r.get("application_name"), r.get("state")] for r in p.get("replication", [])],
           "cluster": None}
    if c is not None:
        out["cluster"] = [[m.get("name"), m.get("role"), m.get("state"), m.get("lag")]
                          for m in c.get("members", [])]
    return out


def round_(apis):
    res = {}
    t0 = time.time()

    def one(name, url):
        res[name] = member(url)
    th = [threading.Thread(target=one, args=kv) for kv in apis.items()]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return {"t": round(t0, 3), "t_end": round(time.time(), 3), "m": res}


def apis_of(items):
    return dict(kv.split("=", 1) for kv in items)


def primary(m):
    return m.get("state") == "running" and m.get("role") in ("master", "primary")


def back(p, vm, impacted, bad):
    """every VM of impacted leads or streams in round p (vm's prepare starts)"""
    views = [m["cluster"] for m in p["m"].values() if m.get("cluster")]
    leader = next((x[0] for v in views for x in v if x[1] in ("leader", "standby_leader")), None)
    streaming = {x[0] for x in (p["m"].get(leader, {}).get("replication") or []) if x[1] == "streaming"}
    for b in impacted:
        if b == leader:
            continue
        mine = p["m"].get(b, {})
        row = next((x for v in views for x in v if x[0] == b), None)
        why = []
        if mine.get("state") != "running":
            why.append("PostgreSQL %s" % mine.get("state"))
        if row is None or not isinstance(row[3], int) or row[3] > MAX_LAG:
            why.append("/cluster %s" % (row,))
        if b not in streaming:
            why.append("not streaming from %s (%s)" % (leader, sorted(streaming)))
        if why:
            bad.append("%s's prepare began before %s was back: %s" % (vm, b, "; ".join(why)))


def report(a):
    bad = []
    rounds = [json.loads(l) for l in open(a.rounds) if l.strip()]
    probes = [json.loads(l) for l in open(a.probes) if l.strip()] if a.probes else []
    for r in rounds + probes:
        prim = sorted(n for n, m in r["m"].items() if primary(m))
        if len(prim) > 1:
            bad.append("split brain at %.3f: %s run as primaries" % (r["t"], ", ".join(prim)))
        for n, m in r["m"].items():
            ls = [x[0] for x in (m.get("cluster") or []) if x[1] in ("leader", "standby_leader")]
            if len(ls) > 1:
                bad.append("split brain at %.3f: %s's /cluster names leaders %s" % (r["t"], n, ls))
    impacted = []
    for p in sorted(probes, key=lambda p: p["t"]):
        vm = p["vm"]
        if p.get("at") == "prepare":
            if a.streaming_after:
                back(p, vm, impacted, bad)
            continue
        for n, m in p["m"].items():
            ls = [x[0] for x in (m.get("cluster") or []) if x[1] in ("leader", "standby_leader")]
            if vm in ls:
                bad.append("%s's impact began while %s's /cluster named it leader" % (vm, n))
        if primary(p["m"].get(vm, {})):
            bad.append("%s's impact began while its PostgreSQL ran as the primary" % vm)
        impacted.append(vm)
    ok, fails = [], 0
    for l in open(a.writer):
        f = l.split()
        if f[0] == "ok":
            ok.append((int(f[1]), float(f[2])))
        elif f[0] == "fail":
            fails += 1
    rows = {int(l) for l in open(a.rows) if l.strip()}
    lost = sorted(n for n, _ in ok if n not in rows)
    if lost:
        bad.append("%d committed rows lost: %s" % (len(lost), lost[:20]))
    if not ok:
        bad.append("the writer never committed a row")
    gaps = [b[1] - a_[1] for a_, b in zip(ok, ok[1:]) if b[1] - a_[1] > 0.5]
    fig = {"committed": len(ok), "failed_attempts": fails, "lost": len(lost),
           "longest_gap_s": round(max(gaps, default=0), 2), "total_gap_s": round(sum(gaps), 2),
           "rounds": len(rounds), "impacts": sum(p.get("at") != "prepare" for p in probes),
           "prepares": sum(p.get("at") == "prepare" for p in probes)}
    print(json.dumps(fig))
    for b in bad:
        print("VIOLATION: " + b, file=sys.stderr)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=("watch", "probe", "report"))
    ap.add_argument("--api", nargs="*", default=[])
    ap.add_argument("--out")
    ap.add_argument("--every", type=float, default=0.25)
    ap.add_argument("--vm")
    ap.add_argument("--at", choices=("impact", "prepare"), default="impact")
    ap.add_argument("--rounds")
    ap.add_argument("--probes")
    ap.add_argument("--writer")
    ap.add_argument("--rows")
    ap.add_argument("--streaming-after", action="store_true")
    a = ap.parse_args()
    if a.cmd == "report":
        return report(a)
    apis = apis_of(a.api)
    if a.cmd == "probe":
        r = round_(apis)
        r["vm"] = a.vm
        r["at"] = a.at
        with open(a.out, "a") as f:
            f.write(json.dumps(r) + "\n")
        return 0
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(a.out, "a", buffering=1) as f:
        while not stop:
            r = round_(apis)
            f.write(json.dumps(r) + "\n")
            d = a.every - (time.time() - r["t"])
            if d > 0 and not stop:
                time.sleep(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
