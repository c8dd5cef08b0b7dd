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
. tests/bench/lib.sh
bench_init "$BUILD" imds-sim bench_agent_poll bench_raw_get
bench_sim_start "$TMP/tl"

"$BUILD/bench/bench_raw_get" "$B/vm_3" "$(awk -v g="$GAP" 'BEGIN { print g / 1000 }')" 2>"$TMP/raw.err" &
RP=$!
PIDS+=($RP)
sleep 2
t1=$(date +%s.%N)
c1=$(cpu_us "$RP")
curl_line=$("$BUILD/bench/bench_agent_poll" "$B/vm_2" "$N" "$GAP" | head -1)
c2=$(cpu_us "$RP")
t2=$(date +%s.%N)
kill "$RP"
wait "$RP" || { echo "bench_raw_get failed: $(cat "$TMP/raw.err")" >&2; exit 1; }
fn=$(jq -c --argjson a "$t1" --argjson b "$t2" 'select(.kind=="get" and .vm=="vm_3" and .wall>=$a and .wall<=$b)' "$TMP/tl" | wc -l)
echo "libcurl (bench_agent_poll): $curl_line"
awk -v c=$((c2 - c1)) -v n="$fn" 'BEGIN { printf "floor (bench_raw_get), same window: %d polls, %.1f us CPU per poll\n", n, c / (n ? n : 1) }'
