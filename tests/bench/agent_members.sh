#!/usr/bin/env bash
# What the size of the member list costs an agent: one agent polling once a second,
# with --members listing N members whose endpoints have no coordinator (the agent keeps a
# DEALER and a monitor per voter of the election, 3 by default, and reconnects to each with
# backoff up to 5 s). Prints CPU
# per second (every thread, /proc/PID/task/*/schedstat), RSS and open descriptors, per N.
#   tests/bench/agent_members.sh [BUILD_DIR=build-bench] [SECONDS=10] [N...=3 100 1000]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-bench}
SECS=${2:-10}
shift $(($# > 2 ? 2 : $#))
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(3 100 1000)
. tests/bench/lib.sh
bench_init "$BUILD" schedcoord-agent imds-sim
bench_sim_start

for n in "${SIZES[@]}"; do
    members=$(awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "%svm_%d=127.0.0.1:%d", (i ? "," : ""), i, 30000 + i }')
    "$BUILD/bin/schedcoord-agent" --imds-url "$B/vm_1" --members "$members" --state-dir "$TMP/a$n" \
        --prepare-hook /bin/true --recover-hook /bin/true --insecure --standalone-after 600 \
        --log-level err 2>"$TMP/a$n.err" &
    ap=$!
    PIDS+=($ap)
    sleep 5
    c1=$(cpu_us $ap)
    sleep "$SECS"
    c2=$(cpu_us $ap)
    printf "members=%-5d cpu=%6d us/s  rss=%6d KiB  fds=%d\n" "$n" $(((c2 - c1) / SECS)) \
        "$(kib $ap VmRSS)" "$(ls /proc/$ap/fd | wc -l)"
    kill $ap
    wait $ap 2>/dev/null || true
done
