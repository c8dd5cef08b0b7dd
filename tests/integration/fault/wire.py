#!/usr/bin/python3
"""Bad wire messages for the fault tests (python3-zmq, plain text: the daemons run --insecure).

  wire.py coord tcp://127.0.0.1:PORT MEMBER OUT.json
      DEALER to a coordinator's ROUTER: sends one bad message of every kind (claiming to be
      MEMBER where a member is needed), then writes {"sent": [names...]} to OUT.json.
  wire.py agent PORT NAME OUT.jsonl CMDS
      ROUTER bound on 127.0.0.1:PORT as coordinator NAME (an agent's member endpoint):
      logs every message received (one JSON per line, or {"raw": ...} when not JSON) to
      OUT.jsonl and executes the lines appended to CMDS:
        bad            one bad message of every kind to every agent seen
        send JSON      that message (a JSON object) to every agent seen
        quit
"""
import json
import os
import sys
import time

import zmq

SEQ = [0]


def env(typ, frm, term=0, **fields):
    SEQ[0] += 1
    m = {"v": 1, "type": typ, "from": frm, "term": term, "seq": SEQ[0]}
    m.update(fields)
    return m


def enc(m):
    return json.dumps(m, separators=(",", ":")).encode()


def coord_main(endpoint, member, out):
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.IDENTITY, b"fault-sender")
    s.setsockopt(zmq.LINGER, 2000)
    s.connect(endpoint)
    time.sleep(0.3)
    hb = env("heartbeat", member, incarnation=-1, running_hooks=0, standalone=False)
    bad = [
        ("garbage", [os.urandom(200)]),
        ("truncated", [enc(hb)[:-7]]),
        ("empty", [b""]),
        ("nul", [b'{"v":1,"type":"heartbeat"\x00}']),
        ("utf8", [b'{"v":1,"type":"heart\xff\xfebeat"}']),
        ("trailing", [enc(hb) + b" {}"]),
        ("version", [enc(dict(hb, v=2))]),
        ("type", [enc(dict(hb, type="teleport"))]),
        ("unknown_field", [enc(dict(hb, colour="blue"))]),
        ("bad_range", [enc(dict(hb, running_hooks=100000))]),
        ("float_int", [enc(dict(hb, term=1.0))]),
        ("deep", [b'{"a":' * 40 + b"1" + b"}" * 40]),
        ("not_member", [enc(dict(hb, **{"from": "stranger"}))]),
        ("bad_name", [enc(dict(hb, **{"from": "vm 2; rm -rf /"}))]),
        ("progress_unknown_event", [enc(env("hook_progress", member, 1, event="no-such-event",
                                            phase="prepare", state="done", exit_status=0,
                                            origin="order", order_term=1, detail=""))]),
        ("order_to_coordinator", [enc(env("order", member, 1, action="prepare",
                                          event="some-event"))]),
        ("approve_via_to_coordinator", [enc(env("approve_via", member, 1,
                                                events=["some-event"]))]),
        ("document_invalid", [enc(env("document", member, 0, incarnation=5, observed_at_ms=1,
                                      document={"DocumentIncarnation": 5, "Events": [
                                          {"EventId": "x", "EventType": "Explode",
                                           "ResourceType": "VirtualMachine",
                                           "Resources": ["vm_2"], "EventStatus": "Scheduled",
                                           "NotBefore": "yesterday"}]}))]),
        ("document_not_object", [enc(env("document", member, 0, incarnation=1,
                                         observed_at_ms=1, document="[]"))]),
        ("document_incarnation_mismatch", [enc(env("document", member, 0, incarnation=9,
                                                   observed_at_ms=1,
                                                   document={"DocumentIncarnation": 3,
                                                             "Events": []}))]),
        ("frames", [enc(hb), b"second frame"]),
    ]
    for _name, frames in bad:
        s.send_multipart(frames)
        time.sleep(0.02)
    # Over 1 MiB: ZMQ_MAXMSGSIZE drops it and this connection (libzmq reconnects on its own).
    s.send(b'{"v":1,' + b" " * (1024 * 1024 + 100) + b"}")
    time.sleep(0.5)
    with open(out, "w") as f:
        json.dump({"sent": [n for n, _ in bad] + ["oversize"]}, f)
    s.close()
    ctx.term()


def agent_main(port, name, out, cmds):
    ctx = zmq.Context()
    s = ctx.socket(zmq.ROUTER)
    s.setsockopt(zmq.LINGER, 0)
    s.bind("tcp://127.0.0.1:%s" % port)
    agents = []
    log = open(out, "a", buffering=1)
    pos = 0
    log.write(json.dumps({"ready": True}) + "\n")
    while True:
        while s.poll(50):
            frames = s.recv_multipart()
            rid, body = frames[0], frames[-1]
            if rid not in agents:
                agents.append(rid)
            try:
                log.write(json.dumps({"t": time.time(), "msg": json.loads(body)}) + "\n")
            except ValueError:
                log.write(json.dumps({"t": time.time(), "raw": body[:200].hex()}) + "\n")
        try:
            with open(cmds) as f:
                f.seek(pos)
                lines = f.readlines()
                pos = f.tell()
        except FileNotFoundError:
            lines = []
        for line in lines:
            line = line.strip()
            if line == "quit":
                return
            msgs = []
            if line == "bad":
                hb = env("leader", name, 1, leader=name, lease_ms=3000)
                msgs = [[os.urandom(100)], [enc(hb)[:-3]], [b""], [enc(dict(hb, v=7))],
                        [enc(dict(hb, type="teleport"))], [enc(dict(hb, extra=1))],
                        [enc(hb), b"extra frame"], [enc(dict(hb, term=-1))],
                        [enc(env("order", name, 2, action="explode", event="e1"))],
                        [enc(env("heartbeat", name, 1, incarnation=1, running_hooks=0,
                                 standalone=False))]]
            elif line.startswith("send "):
                m = json.loads(line[5:])
                SEQ[0] += 1
                m.setdefault("seq", SEQ[0])
                msgs = [[enc(m)]]
            for frames in msgs:
                for rid in agents:
                    s.send_multipart([rid] + frames)


if __name__ == "__main__":
    if sys.argv[1] == "coord":
        coord_main(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        agent_main(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
