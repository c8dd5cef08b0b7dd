#!/usr/bin/env python3
"""The demo's closing summary (deploy/demo.sh): per event, what schedcoord did — notice,
NotBefore, drain, approval, impact, recover — and what Azure alone would have done: each event
started at its NotBefore with nothing drained (a rollout's next event created only once the
previous one completed, as the fabric does), and which VMs would then have been down together.

  demo-summary.py --timeline FILE --history FILE [--time-scale X]

--timeline is imds-sim's (--timeline FILE), --history `schedcoordctl history --json`. Times
are seconds after the first notice on the demo's clock; X (imds-sim's --time-scale) converts
them to Azure's. Reads only; prints the tables on stdout; exit 2 on unreadable input."""
import argparse
import email.utils
import json
import sys


def load(args):
    facts = []
    with open(args.timeline) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    facts.append(json.loads(line))
                except ValueError as e:
                    sys.exit(f"demo-summary: {args.timeline}:{n}: not JSON: {e}")
    try:
        with open(args.history) as f:
            history = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"demo-summary: {args.history}: {e}")
    return facts, history


def events_of(facts, history):
    """The events in order of creation, each a dict of what the timeline and the log say."""
    evs, by_id = [], {}
    fd_of = {}
    for h in history:
        d = h.get("data") or {}
        if h.get("kind") == "member" and "fault_domain" in d:
            fd_of[d["name"]] = d["fault_domain"]
    for f in facts:
        kind, eid = f.get("kind"), f.get("event")
        if kind == "impact_start" and "fault_domain" in f:
            fd_of.setdefault(f["vm"], f["fault_domain"])
        if kind == "created":
            nb = email.utils.parsedate_to_datetime(f["not_before"]).timestamp()
            e = {"id": eid, "type": f["event_type"], "vms": f["resources"],
                 "created": f["wall"], "nb": nb, "rollout": f.get("rollout"),
                 "duration": f.get("duration", -1), "impact": {}, "started": None,
                 "how": None, "completed": None, "ordered": None, "prepared": {},
                 "recovered": None}
            evs.append(e)
            by_id[eid] = e
        elif eid in by_id:
            e = by_id[eid]
            if kind == "started":
                e["started"], e["how"] = f["wall"], f.get("how")
            elif kind == "impact_start":
                e["impact"].setdefault(f["vm"], [f["wall"], None])
            elif kind == "impact_end" and f["vm"] in e["impact"]:
                e["impact"][f["vm"]][1] = f["wall"]
            elif kind in ("completed", "cancelled"):
                e["completed"] = f["wall"]
    for h in history:
        d, t = h.get("data") or {}, h.get("wall_ms", 0) / 1000.0
        e = by_id.get(d.get("event_id"))
        if not e:
            continue
        if h.get("kind") == "prepare_ordered" and e["ordered"] is None:
            e["ordered"] = t
        elif h.get("kind") == "hook_progress" and d.get("state") == "done":
            if d.get("phase") == "prepare":
                e["prepared"][d["vm"]] = t
            elif d.get("phase") == "recover":
                e["recovered"] = max(e["recovered"] or 0, t)
    for e in evs:
        e["fds"] = sorted({fd_of[v] for v in e["vms"] if v in fd_of})
    return evs, fd_of


def azure_alone(evs, scale):
    """Each event's start, end of impact and completion had nobody approved anything."""
    last_of_rollout = {}
    for e in evs:
        prev = last_of_rollout.get(e["rollout"]) if e["rollout"] else None
        created = e["created"]
        if prev and prev["completed"] is not None and prev["alone"]:
            created = prev["alone"]["completed"] + max(0.0, e["created"] - prev["completed"])
        start = created + (e["nb"] - e["created"])
        if e["impact"] and all(b is not None for _, b in e["impact"].values()):
            length = max(b for _, b in e["impact"].values()) - min(a for a, _ in e["impact"].values())
        else:
            length = (e["duration"] if e["duration"] >= 0 else 60) / scale
        done = e["completed"] - e["started"] if e["completed"] and e["started"] else length
        e["alone"] = {"start": start, "end": start + length, "completed": start + max(done, length)}
        if e["rollout"]:
            last_of_rollout[e["rollout"]] = e
    return evs


def overlapping(a0, a1, b0, b1):
    eps = 1e-3  # an impact of 0 s still takes the VM down for an instant
    return a0 < max(b1, b0 + eps) and b0 < max(a1, a0 + eps)


def worst_moment(intervals, fd_of):
    """intervals: (start, end, vms). The most fault domains down at one moment: (count, vms, t)."""
    best = (0, [], None)
    for s, _, _ in intervals:
        vms = sorted({v for a, b, vs in intervals if overlapping(a, b, s, s) for v in vs},
                     key=vm_key)
        n = len({fd_of.get(v, -1) for v in vms})
        if n > best[0]:
            best = (n, vms, s)
    return best


def vm_key(v):
    head = v.rstrip("0123456789")
    return (head, int(v[len(head):]) if v[len(head):] else -1)


def vms_fd(vms, fds):
    return " ".join(sorted(vms, key=vm_key)) + " (FD " + ",".join(str(f) for f in fds) + ")"


def table(rows, head):
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeline", required=True)
    ap.add_argument("--history", required=True)
    ap.add_argument("--time-scale", type=float, default=1.0)
    args = ap.parse_args()
    if not args.time_scale > 0:
        ap.error("--time-scale: a number above 0")
    facts, history = load(args)
    evs, fd_of = events_of(facts, history)
    if not evs:
        sys.exit("demo-summary: the timeline holds no event")
    azure_alone(evs, args.time_scale)
    t0 = min(e["created"] for e in evs)
    at = lambda t: "-" if t is None else f"+{t - t0:.1f}"
    azure = lambda s: f"{s * args.time_scale / 60:.0f} min" if args.time_scale != 1 else f"{s:.0f} s"

    print(f"Per event, in seconds after the first notice (x{args.time_scale:g}: "
          f"1 s here is {azure(1)} on Azure):")
    rows = []
    for e in evs:
        imp = [iv for iv in e["impact"].values()]
        down = "-" if not imp else f"{at(min(a for a, _ in imp))}..{at(max(b or a for a, b in imp))}"
        drain = "-"
        if e["ordered"] is not None and e["prepared"]:
            drain = f"{max(e['prepared'].values()) - e['ordered']:.1f} s"
        if e["how"] == "approved":
            approved = f"{at(e['started'])} ({e['nb'] - e['started']:.1f} s early)"
        else:
            approved = f"no: {e['how'] or 'not started'}"
        rows.append([e["id"][:8], e["type"], vms_fd(e["vms"], e["fds"]), at(e["created"]),
                     at(e["nb"]), drain, approved, down, at(e["recovered"])])
    table(rows, ["EVENT", "TYPE", "VMS (FD)", "NOTICE", "NOTBEFORE", "DRAIN", "APPROVED", "DOWN",
                 "RECOVERED"])

    print("\nWhat Azure alone would have done: each event starts at its NotBefore, nobody drained "
          "(a rollout's\nnext event only after the previous one completed):")
    alone_iv = [(e["alone"]["start"], e["alone"]["end"], e["vms"]) for e in evs]
    rows = []
    for e in evs:
        a = e["alone"]
        with_ = [f for f in evs if overlapping(a["start"], a["end"], f["alone"]["start"], f["alone"]["end"])]
        vms = sorted({v for f in with_ for v in f["vms"]}, key=vm_key)
        fds = sorted({fd_of[v] for v in vms if v in fd_of})
        note = f": {len(fds)} fault domains at once" if len(fds) > 1 else ""
        rows.append([e["id"][:8], e["type"], at(a["start"]), f"{at(a['start'])}..{at(a['end'])}",
                     vms_fd(vms, fds) + note])
    table(rows, ["EVENT", "TYPE", "STARTS", "DOWN", "DOWN TOGETHER"])

    # the whole: when it was over, approvals, VMs drained first, fault domains down at once
    coord_iv = [(a, b or a, [v]) for e in evs for v, (a, b) in e["impact"].items()]
    impacts = [(e, v, a) for e in evs for v, (a, _) in e["impact"].items()]
    drained = sum(1 for e, v, a in impacts if v in e["prepared"] and e["prepared"][v] <= a)
    approvals = sum(1 for f in facts if f.get("kind") == "post" and f.get("status") == 200)
    over = max([e["recovered"] or e["completed"] or 0 for e in evs])
    over_alone = max(e["alone"]["completed"] for e in evs)
    worst, worst_alone = worst_moment(coord_iv, fd_of), worst_moment(alone_iv, fd_of)
    def most(w):
        n, vms, t = w
        return f"{n} ({' '.join(vms)} at {at(t)})" if n > 1 else str(n)
    print()
    table([["with schedcoord", f"{at(over)} s ({azure(over - t0)})",
            f"{approvals} (one per event)" if approvals == len(evs) else str(approvals),
            f"{drained} of {len(impacts)}", most(worst)],
           ["Azure alone", f"{at(over_alone)} s ({azure(over_alone - t0)})", "none (NotBefore)",
            f"0 of {len(impacts)}", most(worst_alone)]],
          ["", "ALL DONE", "APPROVAL POSTS", "VMS DRAINED FIRST", "FAULT DOMAINS DOWN AT ONCE"])


if __name__ == "__main__":
    main()
