#!/usr/bin/env bash
# What the size of the member list costs an agent today: one agent polling once a second,
# with --members listing N members whose endpoints have no coordinator (the agent keeps a
# DEALER and a monitor per member and reconnects to each with backoff up to 5 s). Prints CPU
# per second (every thread, /proc/PID/task/*/schedstat), RSS and open descriptors, per N.
#   tests/bench/agent_members.sh [BUILD_DIR=build-bench] [SECONDS=10] [N...=3 100 1000]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-bench}
SECS=${2:-10}
shift $(($# > 2 ? 2 : $#))
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(3 100 1000)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSC_SANITIZE=OFF >/dev/null
fi
cmake --build "$BUILD" -j2 --target schedcoord-agent imds-sim >/dev/null
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

"$BUILD/bin/imds-sim" --listen 127.0.0.1:0 --vms 10 --fault-domains 2 >"$TMP/sim.out" 2>/dev/null &
PIDS+=($!)
for _ in $(seq 100); do grep -q '^listening' "$TMP/sim.out" && break; sleep 0.05; done
b="http://127.0.0.1:$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/sim.out")"
cpu_us() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%d\n", s / 1000}'; }

for n in "${SIZES[@]}"; do
    members=$(awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "%svm_%d=127.0.0.1:%d", (i ? "," : ""), i, 30000 + i }')
    "$BUILD/bin/schedcoord-agent" --imds-url "$b/vm_1" --members "$members" --state-dir "$TMP/a$n" \
        --prepare-hook /bin/true --recover-hook /bin/true --insecure --standalone-after 600 \
        --log-level err 2>"$TMP/a$n.err" &
    ap=$!
    PIDS+=($ap)
    sleep 5
    c1=$(cpu_us $ap)
    sleep "$SECS"
    c2=$(cpu_us $ap)
    printf "members=%-5d cpu=%6d us/s  rss=%6d KiB  fds=%d\n" "$n" $(((c2 - c1) / SECS)) \
        "$(awk '$1 == "VmRSS:" {print $2}' /proc/$ap/status)" "$(ls /proc/$ap/fd | wc -l)"
    kill $ap
    wait $ap 2>/dev/null || true
done
