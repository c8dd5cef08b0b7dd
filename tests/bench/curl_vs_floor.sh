#!/usr/bin/env bash
# The agent's HTTP path alone (sc_imds_get_events over libcurl + the document tracker:
# bench_agent_poll) beside the same GET over a bare socket (bench_raw_get), polling the same
# imds-sim at the same interval in the same window: what libcurl costs over the floor, with no
# heartbeat, no ZeroMQ and no agent loop around it.
#   tests/bench/curl_vs_floor.sh [BUILD_DIR=build-bench] [POLLS=30] [GAP_MS=1000]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-bench}
N=${2:-30}
GAP=${3:-1000}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSC_SANITIZE=OFF >/dev/null
fi
cmake --build "$BUILD" -j2 --target imds-sim bench_agent_poll bench_raw_get >/dev/null
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY
export NO_PROXY='*' no_proxy='*'

"$BUILD/bin/imds-sim" --listen 127.0.0.1:0 --vms 10 --fault-domains 2 --timeline "$TMP/tl" \
    >"$TMP/sim.out" 2>/dev/null &
PIDS+=($!)
for _ in $(seq 100); do grep -q '^listening' "$TMP/sim.out" && break; sleep 0.05; done
b="http://127.0.0.1:$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/sim.out")"
# the same document as agent_vs_python.sh: two events in the set
curl -s -X POST -d '{"EventType":"Reboot","FaultDomain":1,"NoticeSeconds":3600}' "$b/control/events" >/dev/null
curl -s -X POST -d '{"EventType":"Freeze","Resources":["vm_2"],"NoticeSeconds":3600,"DurationInSeconds":5}' "$b/control/events" >/dev/null

"$BUILD/bench/bench_raw_get" "$b/vm_3" "$(awk -v g="$GAP" 'BEGIN { print g / 1000 }')" 2>"$TMP/raw.err" &
RP=$!
PIDS+=($RP)
sleep 2
ns() { awk '{print $1}' /proc/"$RP"/schedstat; }
t1=$(date +%s.%N)
c1=$(ns)
curl_line=$("$BUILD/bench/bench_agent_poll" "$b/vm_2" "$N" "$GAP" | head -1)
c2=$(ns)
t2=$(date +%s.%N)
kill "$RP"
wait "$RP" || { echo "bench_raw_get failed: $(cat "$TMP/raw.err")" >&2; exit 1; }
fn=$(jq -c --argjson a "$t1" --argjson b "$t2" 'select(.kind=="get" and .vm=="vm_3" and .wall>=$a and .wall<=$b)' "$TMP/tl" | wc -l)
echo "libcurl (bench_agent_poll): $curl_line"
awk -v c=$((c2 - c1)) -v n="$fn" 'BEGIN { printf "floor (bench_raw_get), same window: %d polls, %.1f us CPU per poll\n", n, c / 1000 / (n ? n : 1) }'
