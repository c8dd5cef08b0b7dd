#!/usr/bin/env bash
# imds-sim under 1,000 VMs polling once per second each (1,000 req/s, keep-alive): reports the
# simulator's CPU (utime+stime from /proc/PID/stat over the polling window) as % of one
# core, its RSS, and the clients' median latency.
#
#   tests/bench/sim_1000.sh [BUILD_DIR] [SECONDS] [VMS]
#
# BUILD_DIR must hold bin/imds-sim and bench/bench_sim_poll; measure a build without
# sanitizers (e.g. cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release).
set -euo pipefail
BUILD="${1:-build}"
SECS="${2:-20}"
VMS="${3:-1000}"
SIM="$BUILD/bin/imds-sim"
POLL="$BUILD/bench/bench_sim_poll"
[ -x "$SIM" ] && [ -x "$POLL" ] || { echo "need $SIM and $POLL" >&2; exit 2; }
TMP=$(mktemp -d)
PID=""
cleanup() { [ -z "$PID" ] || kill "$PID" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

"$SIM" --listen 127.0.0.1:0 --vms "$VMS" --fault-domains 5 >"$TMP/out" 2>"$TMP/err" &
PID=$!
for _ in $(seq 100); do grep -q '^listening on' "$TMP/out" && break; sleep 0.05; done
PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$TMP/out")
B="http://127.0.0.1:$PORT"
# A few events so every document has content (every VM sees every event of its set).
for fd in 0 1 2; do
    curl -sS -f -o /dev/null -d "{\"EventType\":\"Reboot\",\"FaultDomain\":$fd,\"NoticeSeconds\":86400}" "$B/control/events"
done
curl -sS -f -o /dev/null -d '{"EventType":"Freeze","Resources":["vm_7"],"NoticeSeconds":86400,"DurationInSeconds":5}' "$B/control/events"

ticks() { awk '{ print $14 + $15 }' "/proc/$PID/stat"; }
HZ=$(getconf CLK_TCK)
"$POLL" "$B" "$VMS" 2 >/dev/null || true   # warm up: open the connections
t0=$(ticks); w0=$(date +%s%N)
res=$("$POLL" "$B" "$VMS" "$SECS")
t1=$(ticks); w1=$(date +%s%N)
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$PID/status")
cpu=$(awk -v t="$((t1 - t0))" -v hz="$HZ" -v w="$((w1 - w0))" 'BEGIN { printf "%.1f", 100 * t / hz / (w / 1e9) }')
echo "$res"
echo "imds-sim: vms=$VMS cpu=${cpu}% of one core rss=${rss} KiB over ${SECS} s"
