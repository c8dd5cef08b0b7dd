# Shared by the benchmark scripts of tests/bench (sourced; they run from the source tree).

# bench_init BUILD TARGET...: configures BUILD as a Release build without sanitizers if it does
# not exist, builds TARGETs, and sets BIN, TMP (removed on exit) and PIDS (killed on exit);
# drops proxy settings (everything is on loopback).
bench_init() {
    BUILD=$1
    shift
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
        cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSC_SANITIZE=OFF >/dev/null
    fi
    cmake --build "$BUILD" -j2 --target "$@" >/dev/null
    BIN="$BUILD/bin"
    TMP=$(mktemp -d)
    PIDS=()
    trap bench_cleanup EXIT
    unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY
    export NO_PROXY='*' no_proxy='*'
}

bench_cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}

# bench_sim_start [TIMELINE]: imds-sim with 10 VMs in 2 fault domains, and the two events every
# agent benchmark puts in the set so that documents have content; sets B to its base URL.
bench_sim_start() {
    "$BIN/imds-sim" --listen 127.0.0.1:0 --vms 10 --fault-domains 2 ${1:+--timeline "$1"} \
        >"$TMP/sim.out" 2>/dev/null &
    PIDS+=($!)
    for _ in $(seq 100); do grep -q '^listening' "$TMP/sim.out" && break; sleep 0.05; done
    B="http://127.0.0.1:$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/sim.out")"
    curl -s -X POST -d '{"EventType":"Reboot","FaultDomain":1,"NoticeSeconds":3600}' "$B/control/events" >/dev/null
    curl -s -X POST -d '{"EventType":"Freeze","Resources":["vm_2"],"NoticeSeconds":3600,"DurationInSeconds":5}' \
        "$B/control/events" >/dev/null
}

# CPU time in microseconds of every thread of a process (schedstat: nanosecond resolution,
# where utime+stime in /proc/PID/stat only counts 10 ms ticks).
cpu_us() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%d\n", s / 1000}'; }
# kib PID KEY: a "KEY: N kB" line of /proc/PID/status (VmRSS, RssAnon, ...)
kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
