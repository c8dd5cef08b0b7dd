#!/usr/bin/env python3
"""Liveness accounting (issue 20): why did the platform start an event at its NotBefore?

Azure starts an event at NotBefore when nobody approved it; under faults that is expected, but
a coordinator that simply never acts looks the same from outside. For every event the
simulator started at NotBefore (timeline "started", how "not_before"), this divides its notice,
from its creation to NotBefore - margin (the coordinators' --deadline-margin-s), into what
kept it from being approved, instant by instant, first match wins:

  faults      a fault on the coordinators, and the time they need after it (--settle: an
              election and a new leader's start grace): a voter's coordinator killed, stopped
              (Freeze, pause) or restarted (the roll), a partition that cuts a voter off, slow
              links between two voters, a slow disk under a voter; and what the coordinators'
              own logs show of the machine: the acting leader stalled (TILT), a handover. Its
              part where no voter set had a majority of its voters running with that list
              (not killed, not stopped; during a roll that changes the voters, members on the
              other list do not count) is "quorum lost".
  no leader   otherwise, no coordinator acting past its start grace ("may act" true and its
              grace over) — unexplained: nothing kept the voters from electing one that acts.
  queued      a leader acting, and a VM of another fault domain out (prepare started, recover
              not ended; or impacted undrained) for another event, while its event is on or
              its recover due: one fault domain at a time (Preempt/Terminate and short Freezes
              are never queued); or one of its own VMs out so for another event: drained for
              this one once recovered from that one. Other VMs of its own domains never queue
              it.
  voters replaced
              the same, behind a VM out for an event that was open across a roll that
              changed the voters: the new voters' log never had what the old ones decided
              (configuration entries are issue 21), so the VM is out until it recovered.
  held        the same, but the other VM stays out although its event is over and the
              leaders had --need seconds (outside faults, its agent up, every VM reachable
              or dead for --dead-after) to recover it — unexplained.
  VM cut off  a leader acting, the domain free, but one of the event's VMs unreachable: its
              agent killed (until started again, plus --vm-settle), in a partition, its IMDS
              failing (3 s), restarted by the roll.
  rolled back a leader acting, the domain free, the VMs reachable, but a prepare of the event
              was interrupted by a fault (its agent killed or restarted during the hook: the
              coordinators' ALERT prepare_failed says "interrupted"): the drain was rolled back
              and is tried again only after --retry seconds (the coordinators'
              prepare-retry-s), as the policy says.
  free        a leader acting, the domain free, the VMs reachable: the coordinators had their
              chance — unexplained.

An event is explained when free, no leader and held each stay under --need seconds and
together under twice that; its cause is then "no leader acting for its whole notice" (no
acting leader at all in it), "short notice" (the notice minus the margin is under --need:
Preempt's 30 s are 1.5 s at x20), or the largest of quorum lost, faults, queued and VM cut
off and rolled back. The coordinators' alerts about the event (deadline, forecast_late, member_down...) are
quoted after it. Faults come from --faults, the nemesis' log ("UNIX_TIME WHAT ARGS": kill|start|
term|stop|cont c|a I, partition I..., heal, imds I, slowlink MS I..., slowdisk MS I..., roll I,
gone I); voters from the coordinators' "election voters=..." lines (every set seen).

Prints one line per event started at NotBefore, then "liveness: N started at NotBefore:
explained by CAUSE: n, ...; unexplained: U". Exit 1 when U > 0."""
import argparse
import collections
import datetime
import json
import os
import re
import sys

INF = float("inf")
LOGFMT = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')
LINE = re.compile(r'^(\S+Z) schedcoord-coordinator (.*)$')


# ---- interval sets: sorted lists of disjoint [s, e) ------------------------------------------
def norm(iv):
    out = []
    for s, e in sorted((s, e) for s, e in iv if e > s):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def inter(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append([s, e])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def minus(a, b):
    out = []
    for s, e in a:
        cur = s
        for bs, be in b:
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                out.append([cur, bs])
            cur = max(cur, be)
            if cur >= e:
                break
        if cur < e:
            out.append([cur, e])
    return out


def size(a):
    return sum(e - s for s, e in a)


def hms(t):
    if t == INF:
        return "never"
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def member_of(path):
    stem = os.path.basename(path).split(".")[0]
    return "vm_0" if stem == "coord" else "vm_" + stem.split("_", 1)[1]


# ---- the coordinators' logs ------------------------------------------------------------------
def read_logs(paths, ends, stopped):
    """-> (planning intervals, processes (member, from, to, its voters), leaders' spans,
    stalls, handovers, alerts).
    ends: member -> times its process ended (killed, terminated): what was open closes there;
    stopped: member -> [[SIGSTOP, SIGCONT)]: not acting then (it logs nothing of it)."""
    all_planning, procs, leader_spans, stalls, handovers, alerts = [], [], [], [], [], []
    for path in paths:
        name = member_of(path)
        planning, proc = [], None
        may, grace, plan_from, lead_from = None, True, None, None
        kill_at = sorted(ends.get(name, []))

        def close(t, ended=False):
            nonlocal may, plan_from, lead_from, grace, proc
            if ended and proc:
                procs.append((name, proc[0], t, proc[1]))
                proc = None
            if plan_from is not None:
                planning.append([plan_from, t])
            if lead_from is not None:
                leader_spans.append((name, lead_from, t))
            may, plan_from, lead_from, grace = None, None, None, True

        for line in open(path, errors="replace"):
            m = LINE.match(line)
            if not m:
                continue
            t = ts(m.group(1))
            while kill_at and kill_at[0] <= t:
                close(kill_at.pop(0), True)
            f = {k: v.strip('"') for k, v in LOGFMT.findall(m.group(2))}
            msg = f.get("msg", "")
            if msg == "election" and "voters" in f:  # a process starts
                close(t, True)
                proc = (t, tuple(sorted(f["voters"].split(","))))
            elif msg == "started":
                close(t)
            elif msg == "stopped":
                close(t, True)
            elif msg == "role":
                if f.get("role") == "leader":
                    lead_from, grace = t, True
                    if plan_from is not None:
                        planning.append([plan_from, t])
                        plan_from = None
                elif lead_from is not None:
                    leader_spans.append((name, lead_from, t))
                    lead_from = None
            elif msg == "may act":
                may = f.get("value") == "true"
                if may and not grace and plan_from is None:
                    plan_from = t
                elif not may and plan_from is not None:
                    planning.append([plan_from, t])
                    plan_from = None
            elif msg.endswith("grace over: planning"):
                grace = False
                if may and plan_from is None:
                    plan_from = t
            elif msg.startswith("stalled: acting again"):
                stalls.append((name, t))
                if msg.endswith("every member reported"):
                    grace = True
                    if plan_from is not None:
                        planning.append([plan_from, t])
                        plan_from = None
            elif msg == "handover" or (msg == "election" and "transferring the lead" in
                                       f.get("why", "")):
                handovers.append((name, t))
            elif msg == "ALERT":
                alerts.append((t, f.get("event", "-"), f.get("alert", "?"), f.get("why", "")))
        end = kill_at[0] if kill_at else INF
        close(end, True)
        all_planning += minus(norm(planning), stopped.get(name, []))
    return norm(all_planning), procs, leader_spans, stalls, handovers, alerts


# ---- the nemesis' faults ---------------------------------------------------------------------
def read_faults(path):
    out = []
    if path and os.path.exists(path):
        for line in open(path):
            p = line.split()
            if len(p) >= 2:
                out.append((float(p[0]), p[1], p[2:]))
    return sorted(out)


def down_spans(faults, who, kinds=("kill", "term", "stop")):
    """who ('c' or 'a') -> vm index -> [[down, up)]: killed, terminated or stopped (kinds)
    until started or continued again (INF when never)."""
    spans, since = collections.defaultdict(list), {}
    for t, what, args in faults:
        if what in kinds and args and args[0] == who:
            since.setdefault(int(args[1]), t)
        elif what in ("start", "cont") and args and args[0] == who:
            i = int(args[1])
            if i in since:
                spans[i].append([since.pop(i), t])
    for i, t in since.items():
        spans[i].append([t, INF])
    return spans


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeline", required=True)
    ap.add_argument("--hooks", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--fault-domains", type=int, required=True)
    ap.add_argument("--faults", default="", help="the nemesis' faults.log")
    ap.add_argument("--margin", type=float, default=1.0, help="--deadline-margin-s (s)")
    ap.add_argument("--need", type=float, default=3.0,
                    help="seconds of a chance an event needs to be drained and approved")
    ap.add_argument("--settle", type=float, default=7.0,
                    help="after a fault on the coordinators: an election and a start grace (s)")
    ap.add_argument("--vm-settle", type=float, default=2.0,
                    help="after a VM is reachable again: its agent's hello and document (s)")
    ap.add_argument("--dead-after", type=float, default=15.0,
                    help="the coordinators' --dead-after: a member unheard so long is dead (s)")
    ap.add_argument("--retry", type=float, default=30.0,
                    help="the coordinators' prepare-retry-s: the wait after a rollback (s)")
    ap.add_argument("logs", nargs="+", help="the coordinators' logs (coord*.err)")
    a = ap.parse_args()

    tl = [json.loads(l) for l in open(a.timeline) if l.strip()]
    state = json.load(open(a.state))
    events = {e["EventId"]: e for e in state["events"]}
    created = {t["event"]: t["wall"] for t in tl if t["kind"] == "created"}
    started = {t["event"]: (t["wall"], t.get("how")) for t in tl if t["kind"] == "started"}
    over = {t["event"]: t["wall"] for t in tl if t["kind"] in ("completed", "cancelled")}
    impact = {(t["vm"], t["event"]): t["wall"] for t in tl
              if t["kind"] == "impact_start" and t.get("vm")}
    deleted_at = {t["vm"]: t["wall"] for t in tl
                  if t["kind"] == "impact_start" and t.get("deleted") and t.get("vm")}
    faults = read_faults(a.faults)

    def fd(vm):
        return int(vm.rsplit("_", 1)[1]) % a.fault_domains

    def idx(vm):
        return int(vm.rsplit("_", 1)[1])

    cdown, adown = down_spans(faults, "c"), down_spans(faults, "a")
    ends = {f"vm_{i}": [s for s, _ in sp] for i, sp in down_spans(faults, "c", ("kill", "term")).items()}
    stopped = {f"vm_{i}": sp for i, sp in down_spans(faults, "c", ("stop",)).items()}
    planning, procs, leader_spans, stalls, handovers, alerts = read_logs(a.logs, ends, stopped)
    voter_sets = {vs for _, _, _, vs in procs}

    # ---- faults on the coordinators (with what they need after), and quorum lost ----------
    # Who votes and who leads when a fault strikes: a fault on the leader, or one that leaves
    # its side without a majority, costs an election and a start grace (--settle); one on a
    # voter that follows, only its own time back (--vm-settle); one on a non-voter, nothing.
    def voters_at(t):
        return {idx(v) for n, s, e, vs in procs if s <= t < e for v in vs}

    def leads(i, s, e):
        return any(n == f"vm_{i}" and ls < max(e, s + 1e-6) and s <= le
                   for n, ls, le in leader_spans)

    def leader_at(t):
        return {idx(n) for n, ls, le in leader_spans if ls <= t < le}

    def hit(i_set, s, e):
        """a fault on the coordinators i_set from s to e: how long it disturbs"""
        vs = voters_at(s)
        if any(leads(i, s, e) for i in i_set & vs):
            return [s, e + a.settle]
        return [s, e + a.vm_settle] if i_set & vs else None

    dist = []
    for i, sp in cdown.items():
        for s, e in sp:
            d = hit({i}, s, e)
            if d:
                dist.append(d)
    cut, slow_on, disk_on = None, None, None
    for t, what, args in faults + [(INF, "end", [])]:
        if what in ("partition", "end") and cut:  # a partition not healed lasts
            what, args = "heal", args
        if what == "partition":
            cut = (t, {int(x) for x in args})
        elif what == "heal" and cut:
            s, ins = cut
            vs, ls = voters_at(s), leader_at(s)
            side = ins if ls & ins else (set(range(256)) - ins)
            if not ls or len(vs & side) <= len(vs) // 2:
                dist.append([s, t + a.settle])  # the leader's side lost its majority
            elif vs & ins:
                dist.append([s, t + a.vm_settle])
            cut = None
        if what == "slowlink" or (what == "end" and slow_on):
            if slow_on:
                dist.append([slow_on, t + a.settle])
                slow_on = None
            if args and int(args[0]) > 0 and len({int(x) for x in args[1:]} & voters_at(t)) >= 2:
                slow_on = t
        if what == "slowdisk" and args and int(args[0]) > 0:
            disk_on = disk_on or (t, {int(x) for x in args[1:]})
        elif (what == "slowdisk" or what == "end") and disk_on:
            d = hit(disk_on[1], disk_on[0], t)
            if d:
                dist.append(d)
            disk_on = None
    acting = {}  # who acted when: a stall or handover of the acting leader disturbs
    for n, s, e in leader_spans:
        acting.setdefault(n, []).append([s, e])
    for n, t in stalls + handovers:
        if any(s <= t <= e for s, e in acting.get(n, [])):
            dist.append([t, t + a.settle])
    # Quorum lost: no voter set has a majority of its voters running with that same list (a
    # member on another list does not vote in this one's elections: a roll of the list that
    # changes the voters loses the quorum of both for a while), not stopped — and none of its
    # voters running with another list: a coordinator that hears a voter of its list with
    # another members digest does not lead (issue 20), so during a roll that changes the
    # voters neither list leads until every voter of one of them agrees.
    ok, ok_by = [], []  # ok_by: (since, until, voter set)
    for vs in voter_sets:
        pts = []  # (time, +1/-1 a voter of vs up on vs, +1/-1 ... up on another list)
        for n, s0, e0, vs2 in procs:
            if n not in vs:
                continue
            k = 0 if vs2 == vs else 1
            up, down = ((1, 0), (-1, 0)) if k == 0 else ((0, 1), (0, -1))
            pts += [(s0, up), (e0, down)]
            for x, y in inter([[s0, e0]], stopped.get(n, [])):
                pts += [(x, down), (y, up)]
        cnt, other, since = 0, 0, None
        for t, (d, o) in sorted(pts, key=lambda p: p[0]):
            cnt += d
            other += o
            good = cnt > len(vs) // 2 and other == 0
            if good and since is None:
                since = t
            elif not good and since is not None:
                ok.append([since, t])
                ok_by.append((since, t, vs))
                since = None
        if since is not None:
            ok.append([since, INF])
            ok_by.append((since, INF, vs))
    # Voters replaced: a roll that changes the voters hands the lead to a group whose log
    # never had what the old voters decided (no configuration entries: issue 21). An event open
    # from the roll's start until the new group's quorum (its "switch") may be unknown, or known
    # as it was before, to the new group: a VM out for it is rightly out from the switch until
    # it recovered, however long (seeds 7, 41, 78 of the campaign on c8a6ed2).
    switches, prev = [], None
    for since, _, vs in sorted(ok_by, key=lambda x: x[0]):
        if prev is not None and vs != prev:
            switches.append(since)
        prev = vs
    roll_t = [t for t, what, _ in faults if what == "roll"]
    switch_win = [[min((r for r in roll_t if r <= ts), default=ts), ts] for ts in switches]

    def caught(ev):
        """the switch (time) of a roll the event was open across, or None"""
        c0, c1 = created.get(ev, INF), over.get(ev, INF)
        return next((ts for (ws, ts) in switch_win if c0 < ts and c1 > ws), None)

    first = min((s0 for _, s0, _, _ in procs), default=0.0)
    lost = norm([[s0, e0 + a.settle] for s0, e0 in minus([[first, INF]], norm(ok))])
    dist = norm(dist + lost)

    # ---- a VM unreachable: agent down, partition, IMDS fault, roll -------------------------
    vmdown = collections.defaultdict(list)
    for i, sp in adown.items():
        for s, e in sp:
            vmdown[i].append([s, e + a.vm_settle])
    cut = None
    for t, what, args in faults:
        if what == "partition":
            cut = (t, [int(x) for x in args])
        elif what == "heal" and cut:
            for i in cut[1]:
                vmdown[i].append([cut[0], t + a.vm_settle])
            cut = None
        elif what == "imds":
            vmdown[int(args[0])].append([t, t + 3.0])
        elif what == "roll":
            vmdown[int(args[0])].append([t, t + a.vm_settle])
    if cut:
        for i in cut[1]:
            vmdown[i].append([cut[0], INF])
    vmdown = {i: norm(v) for i, v in vmdown.items()}

    # ---- VMs out: (vm, event) -> [start, end) per drain attempt, or impacted undrained ------
    win = collections.defaultdict(lambda: [None, None])
    for line in open(a.hooks):
        p = line.split()
        if len(p) not in (5, 6) or p[0] not in ("start", "end"):
            continue
        key = (p[1], p[2], p[3], int(p[5]) if len(p) == 6 else 1)
        win[key][0 if p[0] == "start" else 1] = float(p[4])
    outs = []  # (vm, event, start, end)
    for (phase, vm, ev, k), (s, _) in win.items():
        if phase == "prepare" and s is not None:
            r = win.get(("recover", vm, ev, k), [None, None])[1]
            outs.append((vm, ev, s, r if r is not None else deleted_at.get(vm, INF)))
        elif phase == "recover" and ("prepare", vm, ev, k) not in win and (vm, ev) in impact:
            outs.append((vm, ev, impact[(vm, ev)], win[(phase, vm, ev, k)][1] or INF))
    for (vm, ev), t in impact.items():  # impacted, never recovered
        if not any(o[0] == vm and o[1] == ev for o in outs):
            outs.append((vm, ev, t, deleted_at.get(vm, INF)))

    # A witness cut off: an event's end is known once every live member that saw it reports it
    # gone; a member cut off (not yet dead: --dead-after) keeps its last "present" vote, so the
    # VMs held out for the event cannot be recovered meanwhile (seed 73 of the campaign on
    # c8a6ed2: vm_8 partitioned 70 ms after the event ended, the end known at the heal)
    witness_cut = norm([[s, min(e, s + a.dead_after)] for sp in vmdown.values() for s, e in sp])

    def chance(vm_i):
        """when a leader acted, outside faults, with vm_i reachable"""
        return minus(minus(planning, dist), vmdown.get(vm_i, []))

    def chance_after_end(vm_i):
        """the same, and every witness of an event's end able to report it"""
        return minus(chance(vm_i), witness_cut)

    def legit_until(vm, ev, s):
        """the end of the time an out VM is rightly out: its event over, then --need s of
        chance to recover it"""
        o = over.get(ev)
        if o is None:
            return INF
        acc, t0 = 0.0, max(o, s)
        for cs, ce in chance_after_end(idx(vm)):
            if ce <= t0:
                continue
            cs = max(cs, t0)
            if acc + (ce - cs) >= a.need:
                return cs + (a.need - acc)
            acc += ce - cs
        return INF

    def out_row(vm, ev, s, e):
        """(vm, event, start, end, rightly out until)"""
        if evict(events, ev):
            # an eviction's VM keeps its domain busy (rule 2) from its prepare (or its deletion)
            # until the event is over, and is never recovered (nemesis seed 3 of the campaign on
            # c8a6ed2: FD 0 queued 3.2 s behind a Terminate of FD 1, counted "free")
            e = over.get(ev, e)  # not its deletion: the planner waits for the event's end
            return (vm, ev, s, e, e)
        return (vm, ev, s, e, min(e, legit_until(vm, ev, s)))

    outs = [out_row(vm, ev, s, e) for vm, ev, s, e in outs
            if not no_drain(events.get(ev, {})) and e > s]
    outs = [o for o in outs if o[3] > o[2]]

    # ---- per event started at NotBefore ---------------------------------------------------
    causes, bad, lines = collections.Counter(), 0, []
    for ev, (t_start, how) in sorted(started.items(), key=lambda x: x[1][0]):
        if how != "not_before" or ev not in created:
            continue
        e = events.get(ev, {})
        vms = [v for v in e.get("Resources", []) if deleted_at.get(v, INF) > created[ev]]
        fds = {fd(v) for v in vms}
        c0, c1 = created[ev], t_start - a.margin
        w = [[c0, c1]] if c1 > c0 else []
        if ev in over and over[ev] < t_start:
            continue
        queue_legit, queue_held, queue_lost, theirs = [], [], [], []
        if not evict(events, ev) and not no_drain(e):
            for vm, ev2, s, end, legit in outs:
                if ev2 == ev or (fd(vm) in fds and vm not in vms):
                    continue
                queue_legit.append([s, legit])
                if legit < end:
                    ts = caught(ev2)
                    if ts is not None and end > ts:
                        queue_lost.append([max(legit, ts), end])
                        end = max(legit, ts)
                    queue_held.append([legit, end])
                theirs.append((f"{vm} for {ev2[:8]}", [[s, legit]], [[legit, end]]))
        queue_legit, queue_held, queue_lost = norm(queue_legit), norm(queue_held), norm(queue_lost)
        vm_cut = norm([iv for v in vms for iv in vmdown.get(idx(v), [])])

        b_fault = inter(w, dist)
        b_lost = inter(w, lost)
        rest = minus(w, dist)
        b_noleader = minus(rest, planning)
        p = inter(rest, planning)
        b_queued = inter(p, queue_legit)
        b_replaced = inter(minus(p, queue_legit), queue_lost)
        p_rest = minus(minus(p, queue_legit), queue_lost)
        b_held = inter(p_rest, queue_held)
        f0 = minus(p_rest, queue_held)
        b_vm = inter(f0, vm_cut)
        rolled = norm([[t, t + a.retry] for t, e2, al, why in alerts
                       if e2 == ev and al == "prepare_failed" and "interrupted" in why])
        b_rolled = inter(minus(f0, vm_cut), rolled)
        b_free = minus(minus(f0, vm_cut), rolled)
        m = {k: size(v) for k, v in (("faults", b_fault), ("quorum lost", b_lost),
                                     ("no leader", b_noleader), ("queued", b_queued),
                                     ("voters replaced", b_replaced), ("held", b_held), ("VM cut off", b_vm),
                                     ("rolled back", b_rolled), ("free", b_free))}
        def blockers(part, held):
            """the other domains' VMs out in part (held: their held time), longest first"""
            o = sorted(((size(inter(part, h if held else lg)), n) for n, lg, h in theirs),
                       reverse=True)
            return ", ".join(f"{n} {d:.1f} s" for d, n in o[:3] if d > 0)

        said = sorted({(al, reason(why) if al == "deadline" else "")
                       for t, e2, al, why in alerts if e2 == ev})
        said_txt = "; coordinators: " + ", ".join(
            f"{al} ({why})" if why else al for al, why in said) if said else ""
        unexpl = None
        if c1 - c0 < a.need:
            cause = "short notice"
        elif m["free"] >= a.need:
            unexpl = f"a leader acted with its domain free and its VMs reachable for " \
                     f"{m['free']:.1f} s (from {hms(b_free[0][0])})"
        elif m["no leader"] >= a.need:
            who = sorted({n for n, s, e2 in leader_spans
                          if any(s < be and bs < e2 for bs, be in b_noleader)})
            unexpl = f"no leader acted for {m['no leader']:.1f} s (from " \
                     f"{hms(b_noleader[0][0])}) while no fault touched the coordinators" + \
                     (f"; leading without acting: {', '.join(who)}" if who else "")
        elif m["held"] >= a.need:
            unexpl = f"queued {m['held']:.1f} s behind VMs held out after their events " \
                     f"ended: {blockers(b_held, True)}"
        elif m["free"] + m["no leader"] + m["held"] >= 2 * a.need:
            unexpl = f"{m['free'] + m['no leader'] + m['held']:.1f} s of free, leaderless " \
                     f"or held time with no fault to explain it"
        elif size(inter(w, planning)) == 0:
            cause = "no leader acting for its whole notice"
        else:
            cause = max((("quorum lost", m["quorum lost"]),
                         ("faults on the coordinators", m["faults"] - m["quorum lost"]),
                         ("queued behind another domain", m["queued"]),
                         ("voters replaced by a roll (issue 21)", m["voters replaced"]),
                         ("its VM cut off", m["VM cut off"]),
                         ("a prepare interrupted: rolled back, retried later", m["rolled back"])),
                        key=lambda x: x[1])[0]
        buckets = ", ".join(f"{k} {v:.1f}" for k, v in m.items())
        head = (f"liveness: {ev[:8]} {e.get('EventType', '?')} {','.join(vms) or '-'} "
                f"(FD {','.join(map(str, sorted(fds))) or '-'}), notice {t_start - c0:.1f} s, "
                f"started at NotBefore {hms(t_start)}")
        if unexpl:
            bad += 1
            lines.append(f"{head}: UNEXPLAINED: {unexpl} [{buckets}]{said_txt}")
        else:
            causes[cause] += 1
            blk = f" ({blockers(b_queued, False)})" if cause.startswith("queued") else ""
            lines.append(f"{head}: explained: {cause}{blk} [{buckets}]{said_txt}")
    for line in lines:
        print(line)
    n = sum(causes.values()) + bad
    expl = ", ".join(f"{c}: {k}" for c, k in causes.most_common())
    print(f"liveness: {n} started at NotBefore: explained by {expl or 'nothing'}; "
          f"unexplained: {bad}")
    return 1 if bad else 0


def reason(why):
    """a deadline alert's reason: "... NotBefore - 1 s (REASON): left to Azure" """
    m = re.search(r"\((.*)\): left to Azure", why)
    return m.group(1) if m else ""


def evict(events, ev):
    return events.get(ev, {}).get("EventType") in ("Preempt", "Terminate")


def no_drain(e):
    d = e.get("DurationInSeconds")
    return e.get("EventType") == "Freeze" and d is not None and 0 <= d < 9


if __name__ == "__main__":
    sys.exit(main())
