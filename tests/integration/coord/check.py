#!/usr/bin/env python3
"""Checks a coordinated rollout from the outside: imds-sim's timeline, its final state and the
hook logs ("start|end|killed PHASE VM EVENT UNIXTIME [ATTEMPT]" lines; ATTEMPT, the drain attempt
SCHEDCOORD_ATTEMPT, is 1 when absent). A prepare runs once per (VM, event, attempt), a recover
at least once (again after its agent was stopped while it ran: "interrupted"): a failed
prepare is rolled back (recovered while its event is still Scheduled) and drained again as
attempt 2, 3... Properties (DESIGN.md safety rules):

  1. exactly one successful approval POST (status 200) per event, no POST for an unknown
     event, and no POST at all for an event after its successful one (failed POSTs, e.g. 429
     from a busy IMDS, are retried and allowed before it); one POST that reached IMDS after
     the platform had started the event at NotBefore is allowed (a drain that ended right at
     NotBefore, the start not yet in the documents: it starts nothing, IMDS answers 200);
  2. every approval after all prepare hooks of the event's Resources finished, and none after
     a VM's last attempt was rolled back (its recover started before the approval); a VM the
     platform deleted before the approval (a Preempt, Terminate) is out of it: nothing left
     to drain;
  3. prepare->recover windows (of one attempt) of VMs of different fault domains never overlap,
     except the windows of one event that alone spans several fault domains (Resources grew,
     or Azure impacts them together) while nothing of another event is busy: the planner's
     too_wide case, where such an event goes alone;
  4. every prepared VM recovered in the same attempt: after its event completed, or — a
     rollback — before the event started and before any approval of it; a VM the platform
     deleted since (evicted by another event) is excused;
  5. (--all-approved) every event started because we approved it, not at NotBefore.
A rehearsal's events (schedcoordctl rehearse) are not the simulator's: their hooks' windows
count in 3 and their VMs must recover (4), and any POST naming one is a POST for an unknown
event (1).

Event classes (docs/design.md), read from the simulator's state and timeline:
  - started by our approval: exactly one successful POST; started at NotBefore or as a host
    failure ("forced"), cancelled, or never started: no successful POST at all;
  - short Freeze (DurationInSeconds 0..8): approved without any hook; one that became short
    (a PATCH) while drained may be approved undrained from then on, and the VMs prepared
    before the change are recovered after it;
  - Preempt / Terminate (evict): drained whatever else is happening (not part of the
    fault-domain rule 3), and the member leaves: never recovered after it completed;
  - cancelled: its prepared VMs recovered after the cancellation;
  - (--strangers vm_6,...) VMs of the simulator outside the cluster: never drained by us, so
    an event naming them is approved once its members are prepared;
  - a VM impacted without a prepare (forced event, or a User event approved at its deadline,
    --user-deadline S): no prepare of another fault domain starts until it is back, and a
    User event may be approved undrained only S seconds after it was created, and only while
    no VM of another fault domain is between its prepare and its recover (rule 2 wins).
Exit 0 when all hold, 1 with one line per violation otherwise."""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeline", required=True)
    ap.add_argument("--hooks", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--fault-domains", type=int, required=True)
    ap.add_argument("--events", type=int, default=0, help="events expected (0: any >= 1)")
    ap.add_argument("--no-events", action="store_true",
                    help="the simulator made no event (a rehearsal only: its made-up events are "
                         "the hooks' own, never POSTed)")
    ap.add_argument("--all-approved", action="store_true")
    ap.add_argument("--strangers", default="",
                    help="comma-separated VMs outside the cluster (no agent, never prepared)")
    ap.add_argument("--user-deadline", type=float, default=None,
                    help="User events may be approved undrained this long after created")
    a = ap.parse_args()
    bad = []

    tl = [json.loads(l) for l in open(a.timeline) if l.strip()]
    state = json.load(open(a.state))
    events = {e["EventId"]: e for e in state["events"]}
    deleted = {v["name"] for v in state.get("vms", []) if v.get("deleted")}
    deleted_at = {t["vm"]: t["wall"] for t in tl  # VM -> when the platform deleted it
                  if t["kind"] == "impact_start" and t.get("deleted") and t.get("vm")}
    strangers = set(filter(None, a.strangers.split(",")))
    resources = {i: [vm for vm in e.get("Resources", []) if vm not in strangers]
                 for i, e in events.items()}
    if (not events and not a.no_events) or (a.events and len(events) != a.events) or \
            (a.no_events and events):
        bad.append(f"expected {0 if a.no_events else a.events or '>= 1'} events, the simulator "
                   f"has {len(events)}")

    def fd(vm):
        return int(vm.rsplit("_", 1)[1]) % a.fault_domains

    started_how = {t["event"]: t.get("how") for t in tl if t["kind"] == "started"}
    started_at = {t["event"]: t["wall"] for t in tl if t["kind"] == "started"}
    cancelled = {t["event"]: t["wall"] for t in tl if t["kind"] == "cancelled"}
    created = {t["event"]: t["wall"] for t in tl if t["kind"] == "created"}

    def short_freeze(typ, d):
        return typ == "Freeze" and d is not None and 0 <= d < 9

    def no_drain(ev):
        e = events.get(ev, {})
        return short_freeze(e.get("EventType"), e.get("DurationInSeconds", -1))

    # An event may become no-drain (a PATCH of its DurationInSeconds or EventType): hooks that
    # started before, while it needed a drain, ran legitimately. ev -> since when (wall).
    no_drain_since, kind_now = {}, {}
    for t in tl:
        ev = t.get("event")
        if t["kind"] == "created":
            kind_now[ev] = [t.get("event_type"), t.get("duration", -1)]
        elif t["kind"] == "updated" and ev in kind_now:
            kind_now[ev] = [t.get("event_type", kind_now[ev][0]),
                            t.get("duration", kind_now[ev][1])]
        else:
            continue
        if not short_freeze(*kind_now[ev]):
            no_drain_since.pop(ev, None)
        else:
            no_drain_since.setdefault(ev, t["wall"])

    def evict(ev):
        return events.get(ev, {}).get("EventType") in ("Preempt", "Terminate")

    def user(ev):
        return events.get(ev, {}).get("EventSource") == "User"

    # hooks: (phase, vm, event, attempt) -> [start, end]; a "killed" line (a test killed the
    # hook with its agent) ends a run. A prepare runs once per attempt (or was killed); a
    # recover may run again: one whose agent was stopped while it ran (or after, before the
    # agent recorded its end: a hook outlives its agent's kill -9) is reported interrupted and
    # run again when ordered again (nemesis seed 65; the agent runs nothing else twice:
    # test_agent_core). Its window is its last run's.
    win = collections.defaultdict(lambda: [None, None])
    runs, killed = collections.Counter(), collections.Counter()
    for n_line, line in enumerate(open(a.hooks), 1):
        p = line.split()
        if len(p) not in (5, 6) or p[0] not in ("start", "end", "killed") or \
                p[1] not in ("prepare", "recover") or (len(p) == 6 and not p[5].isdigit()):
            # a hook that ran without its event id or phase would otherwise go unseen
            bad.append(f"hook log line {n_line} is not 'start|end|killed PHASE VM EVENT TIME "
                       f"[ATTEMPT]': {line.strip()!r}")
            continue
        what, phase, vm, ev, t = p[:5]
        key = (phase, vm, ev, int(p[5]) if len(p) == 6 else 1)
        if what == "start":
            runs[key] += 1
            win[key][0] = float(t)
            win[key][1] = None
        elif what == "killed":
            killed[key] += 1
            win[key][1] = float(t)
        else:
            win[key][1] = float(t)
    for key, n in runs.items():
        if key[0] == "prepare" and n - killed[key] != 1 and n != killed[key]:
            bad.append(f"hook {key} ran {n} times ({killed[key]} killed)")
    for key, (s, e) in win.items():
        if s is None or e is None:
            bad.append(f"hook {key} did not both start and end")

    # 1. one approval POST per event
    posts = [t for t in tl if t["kind"] == "post" and t.get("status") == 200]
    per_event = collections.Counter(i for t in posts for i in t.get("events", []))
    late = collections.Counter(i for t in posts for i in t.get("events", [])
                               if started_how.get(i) == "not_before" and
                               t["wall"] >= started_at.get(i, float("inf")))
    for ev in events:
        want = 1 if started_how.get(ev) == "approved" else 0
        if want == 0 and per_event[ev] == late[ev] == 1:
            continue  # after the platform started it at NotBefore: it started nothing
        if per_event[ev] != want:
            how = started_how.get(ev) or ("cancelled" if ev in cancelled else "never started")
            bad.append(f"event {ev} ({how}): {per_event[ev]} approval POSTs, expected "
                       f"exactly {want}")
    for ev in per_event:
        if ev not in events:
            bad.append(f"POST for unknown event {ev}")
    # A failed POST (429 when the VM's IMDS is busy, ...) is retried: allowed, but never
    # after the event was approved (never again once approved).
    failed = [t for t in tl if t["kind"] == "post" and t.get("status") != 200]
    approved_at = {}
    for t in posts:
        for i in t.get("events", []):
            approved_at.setdefault(i, t["wall"])
    for t in failed:
        for i in t.get("events", []):
            if i in approved_at and t["wall"] > approved_at[i]:
                bad.append(f"event {i}: POST again after it was approved ({t.get('status')})")

    def attempts(phase, vm, ev):
        return sorted(k[3] for k in win if k[:3] == (phase, vm, ev))

    def drain_at(vm, ev, when):
        """The VM's last prepare started before `when`: (attempt, start, end), or None."""
        ks = [k for k in attempts("prepare", vm, ev)
              if (win[("prepare", vm, ev, k)][0] or float("inf")) < when]
        return (ks[-1], *win[("prepare", vm, ev, ks[-1])]) if ks else None

    def rolled_back_by(vm, ev, k, when):
        """The recover of attempt k started before `when` (its drain was undone by then)."""
        r = win.get(("recover", vm, ev, k))
        return r is not None and r[0] is not None and r[0] < when

    # 2. approval after every prepare of its Resources (the VM's last attempt before it)
    undrained_ok = set()  # (vm, ev): approved undrained, legitimately
    for t in posts:
        for ev in t.get("events", []):
            if no_drain(ev) and t["wall"] >= no_drain_since.get(ev, float("-inf")):
                continue
            for vm in resources.get(ev, []):
                if deleted_at.get(vm, float("inf")) <= t["wall"]:
                    continue  # the platform deleted it before: nothing left to drain
                k, s, e = drain_at(vm, ev, t["wall"]) or (None, None, None)
                undone = k is not None and rolled_back_by(vm, ev, k, t["wall"])
                if (undone or e is None or e > t["wall"]) and user(ev) and \
                        a.user_deadline is not None and ev in created and \
                        t["wall"] >= created[ev] + a.user_deadline - 0.2:
                    undrained_ok.add((vm, ev))  # User event at its deadline
                elif undone:
                    bad.append(f"event {ev} approved at {t['wall']:.3f} after {vm}'s attempt "
                               f"{k} was rolled back")
                elif e is None:
                    bad.append(f"event {ev} approved but {vm} never finished preparing")
                elif e > t["wall"]:
                    bad.append(f"event {ev} approved at {t['wall']:.3f} before {vm} finished "
                               f"preparing at {e:.3f}")
    for (phase, vm, ev, k), (s, _) in win.items():
        if not no_drain(ev):
            continue
        if phase == "prepare" and (s is None or s >= no_drain_since.get(ev, float("-inf"))):
            bad.append(f"{phase} hook ran on {vm} for {ev}, a short Freeze (no drain)")
        elif phase == "recover" and ("prepare", vm, ev, k) not in win:
            bad.append(f"{phase} hook ran on {vm} for {ev}, a short Freeze (no drain), "
                       f"without a prepare")

    # 3. windows of different fault domains never overlap
    spans = []
    for (phase, vm, ev, k), (s, e) in win.items():
        if phase != "prepare" or s is None or evict(ev):
            continue  # Preempt/Terminate drain at once, whatever else happens
        r = win.get(("recover", vm, ev, k), (None, None))[1]
        # a VM the platform deleted (a later eviction) before its recover is out until then
        spans.append((s, r if r is not None else deleted_at.get(vm, float("inf")), fd(vm), vm, ev))
    spans.sort()

    def alone(ev, lo, hi):
        """no window of another event overlaps lo..hi"""
        return not any(s < hi and lo < e and ev2 != ev for (s, e, _, _, ev2) in spans)

    for i, x in enumerate(spans):
        for y in spans[i + 1:]:
            if y[0] >= x[1]:
                break
            if y[2] != x[2] and not (x[4] == y[4] and alone(x[4], y[0], min(x[1], y[1]))):
                bad.append(f"overlap: {x[3]} (FD {x[2]}) {x[0]:.3f}..{x[1]:.3f} and "
                           f"{y[3]} (FD {y[2]}) {y[0]:.3f}..{y[1]:.3f}")

    # 3b. a VM impacted without a prepare (forced event, User event at its deadline, an event
    # left to Azure after its drain was rolled back): no prepare of another fault domain starts
    # until its event is over (and it is recovered)
    completed = {t["event"]: t["wall"] for t in tl if t["kind"] == "completed"}
    for ev, vms in resources.items():
        if ev not in started_at or no_drain(ev) or evict(ev):
            continue
        for vm in vms:
            if deleted_at.get(vm, float("inf")) <= started_at[ev]:
                continue  # the platform deleted it before (an eviction): not in service
            d = drain_at(vm, ev, started_at[ev])
            if d and not rolled_back_by(vm, ev, d[0], started_at[ev]):
                continue  # drained when it started
            if started_how.get(ev) == "approved" and (vm, ev) not in undrained_ok:
                continue  # reported by rule 2
            after = [e for k in attempts("recover", vm, ev)
                     for (s, e) in [win[("recover", vm, ev, k)]]
                     if s is not None and s >= started_at[ev] and e is not None]
            end = min(after) if after else completed.get(ev, float("inf"))
            for (phase, vm2, ev2, _), (s2, _) in win.items():
                if phase == "prepare" and s2 is not None and not evict(ev2) and \
                        fd(vm2) != fd(vm) and started_at[ev] < s2 < end:
                    bad.append(f"{vm2} (FD {fd(vm2)}) started preparing for {ev2} at {s2:.3f} "
                               f"while {vm} (FD {fd(vm)}) was impacted undrained by {ev} "
                               f"({started_at[ev]:.3f}..{end:.3f})")

    # 3c. a User event approved undrained (at its deadline): no other fault domain was out
    # (prepare started, recover not ended) when it was approved
    for (vm, ev) in sorted(undrained_ok):
        for (phase, vm2, ev2, k2), (s2, _) in list(win.items()):
            if phase != "prepare" or s2 is None or evict(ev2) or fd(vm2) == fd(vm):
                continue
            r2 = win.get(("recover", vm2, ev2, k2), (None, None))[1]
            if s2 <= approved_at[ev] < (r2 if r2 is not None else deleted_at.get(vm2, float("inf"))):
                bad.append(f"User event {ev} approved undrained at {approved_at[ev]:.3f} while "
                           f"{vm2} (FD {fd(vm2)}) was out for {ev2} ({s2:.3f}..{r2})")

    # 4. every prepared VM recovered (in the same attempt), after its event completed (or was
    # cancelled) or, a rollback, while it was Scheduled and unapproved; a Preempt/Terminate VM
    # is gone instead
    for ev, e in events.items():
        if ev not in completed and ev not in cancelled:
            bad.append(f"event {ev} did not complete")
    for (phase, vm, ev, k), (s, e) in win.items():
        if phase != "prepare":
            continue
        r = win.get(("recover", vm, ev, k))
        over = completed.get(ev, cancelled.get(ev))
        rollback = r is not None and r[0] is not None and \
            r[0] < min(started_at.get(ev, float("inf")), approved_at.get(ev, float("inf")))
        if evict(ev) and ev in completed:
            if r:
                bad.append(f"{vm} recovered after {events[ev].get('EventType')} {ev}: it is gone")
        elif (not r or r[1] is None) and vm in deleted:
            pass  # the platform deleted it (a later eviction) before it could be recovered
        elif not r or r[1] is None:
            bad.append(f"{vm} prepared for {ev} (attempt {k}) but never recovered")
        elif over is not None and r[0] < over and not rollback:
            bad.append(f"{vm} recovered for {ev} (attempt {k}) before the event was over")
    for ev, vms in resources.items():
        if started_how.get(ev) != "approved" or no_drain(ev):
            continue
        for vm in vms:
            if deleted_at.get(vm, float("inf")) <= approved_at.get(ev, float("-inf")):
                continue  # deleted by the platform before the approval
            if not attempts("prepare", vm, ev) and (vm, ev) not in undrained_ok:
                bad.append(f"{vm} in Resources of {ev} was never prepared")

    # 5. started by our approval
    if a.all_approved:
        for t in tl:
            if t["kind"] == "started" and t.get("how") != "approved":
                bad.append(f"event {t.get('event')} started {t.get('how')}, not by approval")

    for b in bad[:40]:
        print("VIOLATION:", b)
    n_fd = len({fd(vm) for (_, vm, _, _) in win})
    print(f"checked: {len(events)} events, {len(posts)} approval POSTs, "
          f"{len(failed)} failed and retried, "
          f"{sum(1 for k in win if k[0] == 'prepare')} prepares over {n_fd} fault domains, "
          f"{len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
