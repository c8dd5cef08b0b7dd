#!/usr/bin/env bash
# End to end: the metrics. After a 3-fault-domain rollout, `schedcoordctl metrics` is valid
# Prometheus text (read back by the prometheus_client parser) whose values agree with what
# happened from the outside: approval POSTs in the simulator's timeline, prepare and recover
# hooks in the hook log, members, term, pause. Then the HTTP endpoint as systemd runs it: an
# inetd-style listener (what Accept=yes does) starts the ExecStart of
# deploy/systemd/schedcoord-metrics@.service for each connection; curl scrapes it: 200 with
# the text (HEAD: the head only), 404 / 405 / 400 for other requests, and 503 naming the
# reason once the coordinator is stopped.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"
PY=python3
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import prometheus_client.parser' 2>/dev/null; then PY=$p; break; fi
done
"$PY" -c 'import prometheus_client.parser' ||
    fail "python3-prometheus-client is missing (deploy/install-deps.sh --test)"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen"
rollout_checked 3 60

# the hook log is settled; the coordinator may still be reading the last reports
settled() {
    ctl metrics >"$TMP/metrics.txt" &&
        grep -qx 'schedcoord_members{state="healthy"} 6' "$TMP/metrics.txt" &&
        grep -qx 'schedcoord_hook_reports_total{phase="recover",state="done"} [6-9]' "$TMP/metrics.txt"
}
wait_for 10 settled || fail "the metrics never showed every member healthy and 6 recovers: $(cat "$TMP/metrics.txt")"
# value NAME [LABELS-AS-JSON]: the sample's value from the parsed text ("" if absent)
"$PY" - "$TMP/metrics.txt" >"$TMP/samples.json" <<'PY' || fail "not valid Prometheus text: $(head -20 "$TMP/metrics.txt")"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in fam.samples:
        out.append({"name": s.name, "labels": s.labels, "value": s.value, "type": fam.type})
print(json.dumps(out))
PY
value() {
    jq -r --arg n "$1" --argjson l "${2:-{\}}" \
        '[.[] | select(.name == $n and .labels == $l) | .value] | if length == 1 then .[0] else "" end' \
        "$TMP/samples.json"
}
# eqv NAME LABELS EXPECTED (EXPECTED ">=N": at least N): noted, and checked all at once by
# eqv_check (one python3 for the whole list: a process per value took a minute on a busy machine)
EXPECT="$TMP/expect.tsv"
: >"$EXPECT"
eqv() { printf '%s\t%s\t%s\n' "$1" "${2:-{\}}" "$3" >>"$EXPECT"; }
eqv_check() {
    python3 - "$TMP/samples.json" "$EXPECT" >"$TMP/eqv.out" <<'PY' || fail "$(cat "$TMP/eqv.out")"
import json, sys
samples = json.load(open(sys.argv[1]))
bad = []
for line in open(sys.argv[2]):
    name, labels, want = line.rstrip("\n").split("\t")
    labels = json.loads(labels)
    got = [s["value"] for s in samples if s["name"] == name and s["labels"] == labels]
    ok = len(got) == 1 and (float(got[0]) >= float(want[2:]) if want.startswith(">=")
                            else float(got[0]) == float(want))
    if not ok:
        near = [f'{s["name"]}{s["labels"]} {s["value"]}' for s in samples if s["name"] == name]
        bad.append(f"{name}{labels} is {got[0] if len(got) == 1 else got}, expected {want}: {near}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}
[ "$(jq -r '[.[] | select(.name == "schedcoord_approval_posts_total") | .type] | unique | .[0]' "$TMP/samples.json")" = counter ] ||
    fail "schedcoord_approval_posts_total is not a counter"

# what happened, seen from outside
posts_vm0=$(jq -s '[.[] | select(.kind == "post" and .status == 200 and .vm == "vm_0")] | length' "$TL")
posts_all=$(jq -s '[.[] | select(.kind == "post" and .status == 200)] | length' "$TL")
prepares=$(grep -c '^start prepare' "$HOOKLOG")
recovers=$(grep -c '^start recover' "$HOOKLOG")
[ "$posts_all" -eq 3 ] && [ "$prepares" -eq 6 ] && [ "$recovers" -eq 6 ] ||
    fail "the rollout itself: $posts_all POSTs, $prepares prepares, $recovers recovers"
eqv schedcoord_approval_posts_total '{"result":"ok"}' "$posts_vm0"
eqv schedcoord_approval_posts_total '{"result":"failed"}' 0
eqv schedcoord_approvals_delegated_total '' $((posts_all - posts_vm0))
eqv schedcoord_orders_total '{"phase":"prepare"}' "$prepares"
eqv schedcoord_orders_total '{"phase":"recover"}' "$recovers"
for ph in prepare recover; do
    eqv schedcoord_hook_reports_total "{\"phase\":\"$ph\",\"state\":\"done\"}" ">=6"
    eqv schedcoord_hook_reports_total "{\"phase\":\"$ph\",\"state\":\"failed\"}" 0
done
eqv schedcoord_events_seen_total '' 3
eqv schedcoord_leader '' 1
eqv schedcoord_term '' 1
eqv schedcoord_paused '' 0
eqv schedcoord_info '{"member":"vm_0","role":"leader","leader":"vm_0"}' 1
ctl status --json >"$TMP/status.json"
for i in 0 1 2 3 4 5; do
    eqv schedcoord_member_up "{\"member\":\"vm_$i\",\"fault_domain\":\"$((i % 3))\",\"update_domain\":\"$(jq -r ".members[] | select(.name == \"vm_$i\") | .update_domain" "$TMP/status.json")\"}" 1
    eqv schedcoord_member_blind "{\"member\":\"vm_$i\"}" 0
done
eqv schedcoord_members '{"state":"healthy"}' 6
eqv schedcoord_alerts_total '{"alert":"forced"}' 0
# every event over: no schedcoord_events series at all (whatever its labels), none waiting
[ "$(jq '[.[] | select(.name == "schedcoord_events")] | length' "$TMP/samples.json")" -eq 0 ] ||
    fail "an event still counted as not over: $(grep '^schedcoord_events{' "$TMP/metrics.txt")"
eqv schedcoord_events_waiting '' 0
eqv_check
start=$(value schedcoord_start_time_seconds)
python3 -c "import sys, time; s = float(sys.argv[1]); sys.exit(0 if time.time() - 300 < s <= time.time() else 1)" "${start:-0}" ||
    fail "start time $start is not within the last 5 minutes"
ok "metrics: valid text; POSTs, orders, hooks, events, members, term agree with the timeline and hook log"

ctl pause >/dev/null
ctl metrics >"$TMP/paused.txt" && grep -qx 'schedcoord_paused 1' "$TMP/paused.txt" ||
    fail "pause not in the metrics: $(grep paused "$TMP/paused.txt")"
ctl resume >/dev/null
ok "the paused gauge follows schedcoordctl pause"

# --- the endpoint as systemd runs it (Accept=yes: one process per connection, the connection
# as stdin and stdout)
UNIT="$SC_SRC/deploy/systemd/schedcoord-metrics@.service"
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT" | sed -e "s|^/usr/bin/|$SC_BIN/|" -e "s|/var/lib/schedcoord/coord|$TMP/coord|")
read -r -a CMD <<<"$EXEC"
[ "${CMD[0]}" = "$SC_BIN/schedcoordctl" ] || fail "unexpected ExecStart: $EXEC"
grep -q '^Accept=yes$' "$SC_SRC/deploy/systemd/schedcoord-metrics.socket" || fail "the socket unit does not Accept=yes"
read -r MP <<<"$(free_ports 1)"
"$PY" - "$MP" "${CMD[@]}" 2>"$TMP/inetd.err" <<'PY' &
import signal, socket, subprocess, sys
port, cmd = int(sys.argv[1]), sys.argv[2:]
children = []
def stop(*_):  # SIGTERM: every scrape process has exited (its sanitizer report written)
    for p in children:
        if p.wait() != 0:
            print("scrape process exit", p.returncode, file=sys.stderr)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(16)
while True:
    conn, _ = srv.accept()
    children.append(subprocess.Popen(cmd, stdin=conn.fileno(), stdout=conn.fileno(), close_fds=True))
    conn.close()
PY
INETD=$!
PIDS+=("$INETD")
M="http://127.0.0.1:$MP/metrics"
up() { curl -sS -o /dev/null "$M" 2>/dev/null; }
wait_for 10 up || fail "the listener did not start: $(cat "$TMP/inetd.err")"
code=$(curl -sS -D "$TMP/h.txt" -o "$TMP/scrape.txt" -w '%{http_code}' "$M")
[ "$code" = 200 ] || fail "scrape: HTTP $code"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$TMP/h.txt" || fail "scrape content type: $(cat "$TMP/h.txt")"
grep -qx 'schedcoord_events_seen_total 3' "$TMP/scrape.txt" || fail "scrape body: $(head -5 "$TMP/scrape.txt")"
"$PY" -c 'import sys; from prometheus_client.parser import text_string_to_metric_families as p; list(p(open(sys.argv[1]).read()))' "$TMP/scrape.txt" ||
    fail "the scraped text does not parse"
curl -sS -I "$M" >"$TMP/head.txt" || fail "HEAD failed"
grep -q '^HTTP/1.1 200' "$TMP/head.txt" && grep -qi '^Content-Length: [1-9]' "$TMP/head.txt" || fail "HEAD: $(cat "$TMP/head.txt")"
[ "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MP/")" = 404 ] || fail "/ is not 404"
[ "$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$M")" = 405 ] || fail "POST is not 405"
bad=$(printf 'HELLO\r\n\r\n' | "$PY" -c 'import socket, sys; s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.sendall(sys.stdin.buffer.read()); print(s.recv(100).decode().split("\r\n")[0])' "$MP")
[ "$bad" = "HTTP/1.1 400 Bad Request" ] || fail "a non-HTTP request got: $bad"
ok "HTTP endpoint (the unit's ExecStart per connection): 200 with the text, HEAD, 404, 405, 400"

coord_stop
code=$(curl -sS -o "$TMP/down.txt" -w '%{http_code}' "$M")
[ "$code" = 503 ] || fail "coordinator down: HTTP $code"
grep -q 'control.sock' "$TMP/down.txt" || fail "the 503 does not say why: $(cat "$TMP/down.txt")"
ok "coordinator down: 503 naming the reason"
kill "$INETD"
wait "$INETD" || fail "the listener did not stop cleanly: $(cat "$TMP/inetd.err")"
sc_untrack "$INETD"
! grep -q 'Sanitizer\|runtime error\|scrape process exit' "$TMP/inetd.err" ||
    fail "a scrape process failed (an answered scrape exits 0: no failed unit per scrape): $(cat "$TMP/inetd.err")"
