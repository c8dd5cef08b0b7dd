#!/usr/bin/env python3
"""Checks what webhook receivers (coord/webhook.py) got from a coordinator's --notify during a
rollout on imds-sim (coord_notify.sh):

- the json receiver got, after leader_changed (vm_0, term 1), for every event of the simulator
  in the order created, exactly event_scheduled, drain_started, approved, event_started,
  event_ended, in that order, each with the event's VMs and fault domain; event_scheduled with
  the plan (drain order ending with its domain; a drain time when it drains at once, else
  saying it is not known; the deadline) and stamped before the event's first prepare
  hook started, arriving before that hook ended; drain_started naming every VM of the domain;
- each other receiver (--same NAME:FORMAT) got the same messages in the same order in its
  format: slack {"text", "blocks": [two mrkdwn sections]}, teams an Adaptive Card 1.2 in the
  message envelope (TextBlock with the line, FactSet with Event), json the same objects;
- what was delivered is counted once: no message twice.
Prints one line per finding and exits 1 when something is wrong."""
import argparse
import datetime
import json
import sys

KINDS = ["event_scheduled", "drain_started", "approved", "event_started", "event_ended"]


def iso(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def delivered(path):
    return [r for r in map(json.loads, open(path)) if r["status"] == 200]


def line_of(fmt, body):
    """The human line of a body of format fmt, after checking its shape; None when malformed."""
    if fmt == "json":
        return body.get("text") if isinstance(body.get("kind"), str) else None
    if fmt == "slack":
        b = body.get("blocks")
        if not (isinstance(b, list) and len(b) == 2 and
                all(x.get("type") == "section" and x["text"]["type"] == "mrkdwn" for x in b) and
                b[0]["text"]["text"] == body.get("text")):
            return None
        return body["text"]
    att = body.get("attachments") or [{}]
    card = att[0].get("content") or {}
    if not (body.get("type") == "message" and len(att) == 1 and
            att[0].get("contentType") == "application/vnd.microsoft.card.adaptive" and
            card.get("type") == "AdaptiveCard" and card.get("version") == "1.2" and
            [x.get("type") for x in card.get("body", [])] == ["TextBlock", "FactSet"]):
        return None
    return card["body"][0]["text"]


def teams_facts(body):
    facts = body["attachments"][0]["content"]["body"][1]["facts"]
    return {f["title"]: f["value"] for f in facts}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeline", required=True)
    ap.add_argument("--hooks", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--json", required=True, help="the json receiver's records")
    ap.add_argument("--same", action="append", default=[], help="FORMAT:RECORDS of another")
    ap.add_argument("--fault-domains", type=int, default=3)
    a = ap.parse_args()
    bad = []

    tl = [json.loads(l) for l in open(a.timeline) if l.strip()]
    created = [t["event"] for t in tl if t["kind"] == "created"]
    res = {e["EventId"]: e.get("Resources", []) for e in json.load(open(a.state))["events"]}
    hooks = [l.split() for l in open(a.hooks) if l.strip()]

    def hook_at(what, ev):
        return min((float(h[4]) for h in hooks if h[:2] == [what, "prepare"] and h[3] == ev),
                   default=None)

    recs = delivered(a.json)
    msgs = [r["body"] for r in recs]
    if not msgs or msgs[0].get("kind") != "leader_changed" or msgs[0].get("leader") != "vm_0" \
            or msgs[0].get("term") != 1:
        bad.append(f"first message is not leader_changed vm_0 term 1: {msgs[:1]}")
    for m in msgs:
        if m.get("from") != "vm_0" or not isinstance(m.get("ts"), str):
            bad.append(f"message without from vm_0 and ts: {m}")
    told = {m.get("event_id") for m in msgs} - {None}
    if told != set(created):
        bad.append(f"events told {sorted(told)}, the simulator created {created}")
    for ev in created:
        mine = [(r, m) for r, m in zip(recs, msgs) if m.get("event_id") == ev]
        kinds = [m["kind"] for _, m in mine]
        if kinds != KINDS:
            bad.append(f"event {ev}: kinds {kinds}, expected {KINDS}")
            continue
        vms = sorted(res.get(ev, []))
        fds = {int(v.rsplit("_", 1)[1]) % a.fault_domains for v in vms}
        for _, m in mine:
            if sorted(m.get("vms", [])) != vms or {m.get("fault_domain")} != fds or \
                    m.get("event_type") != "Reboot" or m.get("domain_type") != "fault":
                bad.append(f"event {ev}: {m['kind']} names vms {m.get('vms')} fault domain "
                           f"{m.get('fault_domain')}, expected {vms} in {fds}")
        (r0, sched) = mine[0]
        start, end = hook_at("start", ev), hook_at("end", ev)
        # the plan: the domains busy now, then its own; a time when it drains at once
        order, detail = sched.get("drain_order", []), sched.get("detail", "")
        if len(fds) != 1 or not order or order[-1] not in fds or len(set(order)) != len(order) \
                or "deadline" not in sched or not (
                    ("drain_at" in sched and "drains now" in detail) or
                    ("drain_at" not in sched and "when it drains is not known" in detail)):
            bad.append(f"event {ev}: event_scheduled without its plan: {sched}")
        if start is None or iso(sched["ts"]) > start or r0["t"] > end:
            bad.append(f"event {ev}: event_scheduled stamped {sched['ts']}, arrived {r0['t']}: "
                       f"not before its first prepare hook ({start} .. {end})")
        if "approval POSTed by vm_" not in mine[2][1].get("detail", "") or \
                "after our approval" not in mine[3][1].get("detail", "") or \
                "completed" not in mine[4][1].get("detail", ""):
            bad.append(f"event {ev}: details {[m.get('detail') for _, m in mine[2:]]}")
    texts = [m.get("text") for m in msgs]
    if len(set(texts)) != len(texts):
        bad.append(f"a message twice: {texts}")
    for same in a.same:
        fmt, path = same.split(":", 1)
        other = [r["body"] for r in delivered(path)]
        lines = [line_of(fmt, b) for b in other]
        if lines != texts:
            bad.append(f"{fmt} ({path}) got {lines}, the json receiver {texts}")
        for b, m in zip(other, msgs):
            if fmt == "slack" and m.get("event_id") and not \
                    b["blocks"][1]["text"]["text"].startswith(f"*Event:* {m['event_id']}\n"):
                bad.append(f"slack details without the Event line {m['event_id']}: {b}")
            if fmt == "teams" and m.get("event_id") and \
                    teams_facts(b).get("Event") != m["event_id"]:
                bad.append(f"teams card without its Event fact {m['event_id']}: {b}")
            if fmt == "json" and b != m:
                bad.append(f"json bodies differ: {b} / {m}")
    for b in bad:
        print("notify:", b)
    print(f"notify: {len(msgs)} messages, {len(created)} events, "
          f"{1 + len(a.same)} receivers checked" if not bad else "notify: FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
