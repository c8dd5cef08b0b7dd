#!/usr/bin/env python3
"""pcmk_watch.py --dir DIR --vms N --out FILE: the outside observer of tests/real/real_pacemaker.sh.
Every 0.3 s it asks the cluster's state (crm_mon -1 --output-as=xml) of one of the N VMs that
is up (DIR/node_I/init.pid there, no DIR/node_I/halt nor down: not shutting down), entered
through nsenter (the VM's mount and network namespaces: libqb's IPC in its /dev/shm, its
abstract sockets), the first that answers with a DC, and appends one JSON line per answer:
  {"t": UNIX_TIME, "from": "vm_1", "nodes": {"vm_0": {"online": true, "standby": false,
   "running": 1}, ...}, "rsc": {"d0": ["vm_0"], ...}}
("rsc": the nodes each active resource runs on). Runs until killed."""
import argparse
import json
import os
import subprocess
import time
import xml.etree.ElementTree as ET


def sample(d, i):
    try:
        with open(os.path.join(d, f"node_{i}", "init.pid")) as f:
            pid = f.read().strip()
    except OSError:
        return None
    for gone in ("halt", "down"):
        if os.path.exists(os.path.join(d, f"node_{i}", gone)):
            return None
    try:
        out = subprocess.run(["nsenter", "-t", pid, "-m", "-n", "-u", "crm_mon", "-1", "--output-as=xml"],
                             capture_output=True, timeout=10).stdout
        root = ET.fromstring(out)
    except (subprocess.TimeoutExpired, ET.ParseError):
        return None
    dc = root.find("./summary/current_dc")
    if dc is None or dc.get("present") != "true":
        return None
    nodes = {}
    for n in root.findall("./nodes/node"):
        nodes[n.get("name")] = {"online": n.get("online") == "true", "standby": n.get("standby") == "true",
                                "running": int(n.get("resources_running", "0"))}
    rsc = {}
    for r in root.iter("resource"):
        if r.get("active") == "true":
            rsc[r.get("id")] = [n.get("name") for n in r.findall("node")]
    return {"t": time.time(), "from": f"vm_{i}", "nodes": nodes, "rsc": rsc}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--vms", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    k = 0
    while True:
        t0 = time.time()
        for j in range(a.vms):
            s = sample(a.dir, (k + j) % a.vms)
            if s:
                with open(a.out, "a") as f:
                    f.write(json.dumps(s) + "\n")
                break
        k += 1  # ask another VM next time: every VM's own view is seen
        time.sleep(max(0.0, 0.3 - (time.time() - t0)))


if __name__ == "__main__":
    main()
