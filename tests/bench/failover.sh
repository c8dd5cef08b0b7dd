#!/usr/bin/env bash
# Failover time: three coordinators on loopback, three voters (one per fault domain), default
# election settings (--election-ms 1000, --heartbeat-ms 100). KILLS times: the leader's
# coordinator is killed (kill -9) and the time from the kill to the moment a survivor leads a
# newer term and may act (its term's first entry committed: `may_act` in its status) is
# measured; the killed one is started again and followed before the next kill. Prints every
# time, the median and the max (goal: median under 3 s, max under 5 s). Then the leader is
# frozen (SIGSTOP) for FREEZE_MS (500, less than the election timeout) and thawed: it must keep
# the lead, in the same term.
#
#   tests/bench/failover.sh [BUILD_DIR=build] [KILLS=20] [FREEZE_MS=500]
#
# Timings come from polling schedcoordctl status every 20 ms (each poll costs a few ms: the
# figures are upper bounds by about that much). --start-grace 0: no agents here.
set -euo pipefail
BUILD="${1:-build}"
KILLS="${2:-20}"
FREEZE_MS="${3:-500}"
BIN="$BUILD/bin"
[ -x "$BIN/schedcoord-coordinator" ] || { echo "need $BIN/schedcoord-coordinator" >&2; exit 2; }
TMP=$(mktemp -d)
PIDS=(0 0 0)
cleanup() {
    for p in "${PIDS[@]}"; do [ "$p" = 0 ] || kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

read -r -a ports <<<"$(python3 -c '
import socket
s = [socket.socket() for _ in range(3)]
[x.bind(("127.0.0.1", 0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')"
M="vm_0=127.0.0.1:${ports[0]}/0,vm_1=127.0.0.1:${ports[1]}/1,vm_2=127.0.0.1:${ports[2]}/2"
up() {
    "$BIN/schedcoord-coordinator" --name "vm_$1" --imds-url http://127.0.0.1:9 --members "$M" \
        --state-dir "$TMP/c$1" --insecure --start-grace 0 --log-level notice \
        2>>"$TMP/c$1.err" &
    PIDS[$1]=$!
}
st() { "$BIN/schedcoordctl" --state-dir "$TMP/c$1" status --json 2>/dev/null || true; }
# "ROLE TERM MAY_ACT LEADER" of member i, or nothing. jq, not python3: on this VM python3
# takes 0.4 s to start, which the figures measured instead of the failover (2.3-2.7 s with
# it, against 1.2-1.3 s in the coordinators' own logs).
view() { st "$1" | jq -r '"\(.role) \(.term) \(.may_act) \(.leader // "-")"' 2>/dev/null || true; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# the member that leads and may act, seen the same by all three; its term: "I TERM"
leader() {
    local i v li="" lt=""
    for i in 0 1 2; do
        read -r role term may ld <<<"$(view "$i")" || return 1
        [ -n "${role:-}" ] || return 1
        if [ "$role" = leader ] && [ "$may" = true ]; then li=$i lt=$term; fi
    done
    [ -n "$li" ] || return 1
    for i in 0 1 2; do
        [ "$(view "$i" | awk '{print $4}')" = "vm_$li" ] || return 1
    done
    echo "$li $lt"
}
wait_leader() {
    local end=$(($(now_ms) + 15000)) l
    while [ "$(now_ms)" -lt "$end" ]; do
        if l=$(leader); then echo "$l"; return 0; fi
        sleep 0.05
    done
    return 1
}

for i in 0 1 2; do up "$i"; done
wait_leader >/dev/null || { echo "failover: no leader at start" >&2; tail -5 "$TMP"/c*.err >&2; exit 1; }
times=()
for ((k = 1; k <= KILLS; k++)); do
    read -r L T <<<"$(wait_leader)" || { echo "failover: no leader before kill $k" >&2; exit 1; }
    t0=$(now_ms)
    kill -9 "${PIDS[$L]}"
    wait "${PIDS[$L]}" 2>/dev/null || true
    PIDS[$L]=0
    new=""
    while [ "$(($(now_ms) - t0))" -lt 15000 ]; do
        for i in 0 1 2; do
            [ "$i" = "$L" ] && continue
            read -r role term may _ <<<"$(view "$i")" || true
            if [ "${role:-}" = leader ] && [ "${may:-}" = true ] && [ "${term:-0}" -gt "$T" ]; then
                new=$i
                break 2
            fi
        done
        sleep 0.02
    done
    t1=$(now_ms)
    [ -n "$new" ] || { echo "failover: no new leader within 15 s after kill $k" >&2; exit 1; }
    times+=($((t1 - t0)))
    printf 'kill %2d: vm_%s (term %s) -> vm_%s in %5d ms\n' "$k" "$L" "$T" "$new" "$((t1 - t0))"
    up "$L"
    # the restarted one follows (PreVote: it does not depose the new leader)
    end=$(($(now_ms) + 10000))
    until [ "$(view "$L" | awk '{print $4}')" = "vm_$new" ]; do
        [ "$(now_ms)" -lt "$end" ] || { echo "failover: vm_$L does not follow vm_$new" >&2; exit 1; }
        sleep 0.05
    done
    # A voter refuses votes during its first election timeout after a start (sc_elect rule 4),
    # which nothing shows outside: kill the next leader only once the restarted one is past it,
    # or the next figure would measure that rule, not a failover.
    sleep 1
done
python3 - "${times[@]}" <<'PY'
import statistics, sys
t = sorted(int(x) for x in sys.argv[1:])
med, mx = statistics.median(t), t[-1]
print(f"failover over {len(t)} kills: median {med / 1000:.2f} s, max {mx / 1000:.2f} s "
      f"(goal: median < 3 s, max < 5 s): {'met' if med < 3000 and mx < 5000 else 'NOT met'}")
PY

read -r L T <<<"$(wait_leader)"
kill -STOP "${PIDS[$L]}"
sleep "$(awk -v ms="$FREEZE_MS" 'BEGIN { print ms / 1000 }')"
kill -CONT "${PIDS[$L]}"
sleep 2 # a negative to check (no new term): give a lost lead the time to show
read -r L2 T2 <<<"$(wait_leader)"
if [ "$L2" = "$L" ] && [ "$T2" = "$T" ]; then
    echo "frozen ${FREEZE_MS} ms (under the election timeout): vm_$L kept the lead, term $T"
else
    echo "frozen ${FREEZE_MS} ms: the lead moved from vm_$L (term $T) to vm_$L2 (term $T2)"
    exit 1
fi
