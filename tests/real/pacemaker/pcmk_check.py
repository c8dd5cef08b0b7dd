#!/usr/bin/env python3
"""pcmk_check.py --dir DIR --vms N: what tests/real/real_pacemaker.sh asserts about the cluster,
from the outside: the observer's samples (DIR/mon.jsonl, pcmk_watch.py), the cluster's state at
each impact's start (DIR/impact.VM.EVENT.xml, platform.sh), imds-sim's timeline
(DIR/timeline.jsonl), the hook log (DIR/hooks.log: "start|end PHASE VM EVENT TIME ATTEMPT") and
the VMs' boot logs (DIR/node_I/vm.log). Resource dI prefers vm_I. For every VM (one impact each):
  1. before its prepare started, the observer saw it online and not in standby, dI on it;
  2. when its impact began, its Pacemaker showed it in standby with no resource on it;
  3. no sample taken while its impact ran (impact_start .. impact_end of the timeline, and
     until its Pacemaker was started again) shows a resource on it;
  4. its recover hook started after the VM was down and before its corosync and Pacemaker
     were started again (the agent before the cluster stack, vm.log), and ended after;
  5. after its recover ended, a sample shows it online, out of standby, dI back on it, and
     every sample after its recover ended shows it out of standby (from another VM: from 5 s
     after, its copy of the CIB may lag).
Exit 0 when all hold, 1 with one line per violation otherwise; prints a summary line."""
import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--vms", type=int, required=True)
    a = ap.parse_args()
    d = a.dir
    bad = []
    samples = [json.loads(line) for line in open(os.path.join(d, "mon.jsonl")) if line.strip()]
    tl = [json.loads(line) for line in open(os.path.join(d, "timeline.jsonl")) if line.strip()]
    hooks = [line.split() for line in open(os.path.join(d, "hooks.log")) if line.strip()]
    moved = []
    for i in range(a.vms):
        vm, rsc = f"vm_{i}", f"d{i}"
        starts = [f for f in tl if f.get("kind") == "impact_start" and f.get("vm") == vm]
        ends = [f for f in tl if f.get("kind") == "impact_end" and f.get("vm") == vm]
        if len(starts) != 1 or len(ends) != 1:
            bad.append(f"{vm}: {len(starts)} impact starts, {len(ends)} ends (want one each)")
            continue
        ev, t_imp, t_end = starts[0]["event"], starts[0]["wall"], ends[0]["wall"]

        def hook(what, phase):
            for h in hooks:
                if h[0] == what and h[1] == phase and h[2] == vm and h[3] == ev:
                    return float(h[4])
            return None
        p0, r0, r1 = hook("start", "prepare"), hook("start", "recover"), hook("end", "recover")
        if None in (p0, r0, r1):
            bad.append(f"{vm}: hooks of {ev}: prepare start {p0}, recover start {r0}, end {r1}")
            continue
        # 1. home before the prepare
        before = [s for s in samples if s["t"] < p0]
        if not before:
            bad.append(f"{vm}: no sample before its prepare")
        else:
            s = before[-1]
            n = s["nodes"].get(vm, {})
            if not n.get("online") or n.get("standby") or s["rsc"].get(rsc) != [vm]:
                bad.append(f"{vm}: before its prepare: {n}, {rsc} on {s['rsc'].get(rsc)}")
        # 2. the state when its impact began
        try:
            root = ET.parse(os.path.join(d, f"impact.{vm}.{ev}.xml")).getroot()
            n = root.find(f"./nodes/node[@name='{vm}']")
            on = [r.get("id") for r in root.iter("resource")
                  if r.get("active") == "true" and any(x.get("name") == vm for x in r.findall("node"))]
            if n is None or n.get("standby") != "true" or n.get("resources_running") != "0" or on:
                bad.append(f"{vm}: at its impact's start: standby={None if n is None else n.get('standby')} "
                           f"running={None if n is None else n.get('resources_running')} resources {on}")
        except (OSError, ET.ParseError) as e:
            bad.append(f"{vm}: no cluster state at its impact's start: {e}")
        # 4. the agent's recover before the cluster stack
        vmlog = open(os.path.join(d, f"node_{i}", "vm.log")).read()
        boots = [float(t) for t in re.findall(r"^(\S+) pacemaker started$", vmlog, re.M)]
        downs = [float(t) for t in re.findall(r"^(\S+) down$", vmlog, re.M)]
        down = next((t for t in downs if t > t_imp), None)
        if down is None or not down < r0:
            bad.append(f"{vm}: recover started at {r0:.3f}, the VM down at {down}: not after")
        back = next((t for t in boots if t > t_imp), None)
        if back is None:
            bad.append(f"{vm}: Pacemaker not started again after its impact")
            back = t_end
        elif not r0 < back < r1:
            bad.append(f"{vm}: recover {r0:.3f}..{r1:.3f}, Pacemaker started {back:.3f}: not within")
        # 3. nothing on it from its impact's start until it was back
        during = [s for s in samples if t_imp <= s["t"] <= max(t_end, back)]
        for s in during:
            here = sorted(r for r, ns in s["rsc"].items() if vm in ns)
            if here:
                bad.append(f"{vm}: at {s['t']:.3f} (its impact: {t_imp:.3f}..{t_end:.3f}) {here} on it")
                break
        # 5. back: online, out of standby, its resource home
        after = [s for s in samples if s["t"] > r1]
        home = next((s for s in after if s["nodes"].get(vm, {}).get("online")
                     and not s["nodes"][vm].get("standby") and s["rsc"].get(rsc) == [vm]), None)
        if home is None:
            bad.append(f"{vm}: not seen back home after its recover: last {after[-1] if after else None}")
        # (the recover saw it out of standby in its own VM's CIB; another VM's copy may be a
        # moment behind)
        still = [s for s in after if (s["from"] == vm or s["t"] > r1 + 5) and s["nodes"].get(vm, {}).get("standby")]
        if still:
            bad.append(f"{vm}: in standby at {still[0]['t']:.3f}, after its recover ended at {r1:.3f}")
        moved.append(f"{vm}: {len(during)} samples during its impact, "
                     f"Pacemaker back {back - r0:.1f} s into the recover, home {home['t'] - r1:.1f} s after"
                     if home else f"{vm}: -")
    for b in bad:
        print(b)
    print(f"{len(samples)} samples from {len({s['from'] for s in samples})} VMs; " + "; ".join(moved))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
