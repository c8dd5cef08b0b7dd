#!/usr/bin/env bash
# schedcoord-agent vs Azure's Python sample loop (advanced_sample, from the seeds), polling the
# same imds-sim side by side at the same rate: private memory (RssAnon), shared library pages
# (RssFile) and CPU (utime+stime) per poll, median of RUNS runs.
#   tests/bench/agent_vs_python.sh [BUILD_DIR=build-bench] [SECONDS=20] [INTERVAL=0.25] [RUNS=3]
# BUILD_DIR is configured as a Release build without sanitizers if it does not exist.
# Polls are counted from the simulator's timeline (GETs of each VM in the measured window),
# after a warm-up, so start-up costs (Python imports, the agent's first connections) are out.
# Beside them, bench_raw_get (tests/bench/bench_raw_get.c) makes the same GET over a bare
# keep-alive socket and does nothing else: the floor that any agent polling over TCP pays here.
# AGENT_B=/path/to/another/schedcoord-agent runs that binary too, at the same time on vm_2 with
# its own peer, so that two builds (before / after a change) are compared in the same runs;
# AGENT_B_ARGS are extra flags for it and BEAT_B its peer's leader-message period in ms.
# The peers send a leader message every BEAT ms (default 5000, the coordinator's since issue 11;
# 1000 before), and the agents run with their default heartbeat (5 s since issue 11; 1 s before):
#   AGENT_B=build-bench/bin/schedcoord-agent AGENT_B_ARGS="--heartbeat-interval 1" BEAT_B=1000 \
#       tests/bench/agent_vs_python.sh build-bench 20 1 5   # the old liveness, same runs
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${2:-20}
IVL=${3:-0.25}
RUNS=${4:-3}
WARM=3
BEAT=${BEAT:-5000}
. tests/bench/lib.sh
bench_init "${1:-build-bench}" schedcoord-agent imds-sim sc-agent-peer bench_raw_get

# The sample, unchanged but for its URL and its 1 s sleep; advanced_sample("-1") returns after
# one poll, so calling it in a loop is the sample's own loop with its input ("1" each time).
cat >"$TMP/run_sample.py" <<'PY'
import sys
src = open(sys.argv[1]).read()
src = src.replace("http://169.254.169.254", sys.argv[2]).replace("sleep(1)", "sleep(%s)" % sys.argv[3])
ns = {"__name__": "sample"}
exec(compile(src, "azure_advanced_sample.py", "exec"), ns)
while True:
    ns["advanced_sample"]("-1")
PY

K="$TMP/keys"
mkdir -p "$K"
for n in vm_0 vm_2 vm_4 vm_7 vm_8 vm_9; do "$BIN/sc-agent-peer" keygen --name "$n" --out "$K" >"$K/$n.line"; done
cat "$K"/*.line >"$K/keyring"

# peer_agent PEER VM AGENT INTERVAL TAG [BEAT_MS [ARGS...]]: a test peer PEER as this agent's
# CURVE coordinator (sending a leader message every BEAT_MS, default $BEAT), then AGENT (a
# schedcoord-agent binary, given ARGS) on VM with it as its only member, polling every
# INTERVAL; AP is the agent's pid
peer_agent() {
    local peer=$1 vm=$2 agent=$3 ivl=$4 tag=$5 beat=${6:-$BEAT}
    shift $(($# < 6 ? $# : 6))
    : >"$TMP/cmds$tag"
    "$BIN/sc-agent-peer" --bind "tcp://127.0.0.1:*" --name "$peer" --log "$TMP/peer$tag.log" \
        --cmds "$TMP/cmds$tag" --key "$K/$peer.key" --keys "$K/keyring" 2>/dev/null &
    PIDS+=($!)
    for _ in $(seq 100); do grep -q ready "$TMP/peer$tag.log" 2>/dev/null && break; sleep 0.05; done
    echo "beat 1 $beat" >>"$TMP/cmds$tag" # a live leader: leader messages, no safety net
    "$agent" --imds-url "$B/$vm" \
        --members "$peer=127.0.0.1:$(grep ready "$TMP/peer$tag.log" | jq -r .endpoint | sed 's/.*://')" \
        --state-dir "$TMP/state$tag" --prepare-hook /bin/true --recover-hook /bin/true \
        --key "$K/$vm.key" --keys "$K/keyring" --poll-interval "$ivl" --log-level warn "$@" \
        2>"$TMP/agent$tag.err" &
    AP=$!
    PIDS+=($AP)
}

one_run() {
    local r=$1
    bench_sim_start "$TMP/tl$r"
    peer_agent vm_9 vm_0 "$BIN/schedcoord-agent" "$IVL" "a$r"
    local ap=$AP
    # the same agent polling once an hour: what its liveness alone costs (its CURVE heartbeat
    # to its own peer and the peer's leader message, at their defaults)
    peer_agent vm_7 vm_4 "$BIN/schedcoord-agent" 3600 "i$r"
    local ip=$AP
    local bp=0
    if [ -n "${AGENT_B:-}" ]; then
        # shellcheck disable=SC2086 # AGENT_B_ARGS: separate words
        peer_agent vm_8 vm_2 "$AGENT_B" "$IVL" "b$r" "${BEAT_B:-$BEAT}" ${AGENT_B_ARGS:-}
        bp=$AP
    fi
    python3 "$TMP/run_sample.py" tests/imds-sim/azure_advanced_sample.py "$B/vm_1" "$IVL" \
        >/dev/null 2>"$TMP/py$r.err" &
    local pp=$!
    PIDS+=($pp)
    # the floor: the same GET over a bare keep-alive socket, nothing else (bench_raw_get.c)
    "$BUILD/bench/bench_raw_get" "$B/vm_3" "$IVL" 2>"$TMP/raw$r.err" &
    local rp=$!
    PIDS+=($rp)
    sleep "$WARM"
    local t1 a1 p1 f1 i1 t2 a2 p2 f2 i2
    local b1=0 b2=0
    t1=$(date +%s.%N); a1=$(cpu_us $ap); p1=$(cpu_us $pp); f1=$(cpu_us $rp); i1=$(cpu_us $ip)
    [ "$bp" = 0 ] || b1=$(cpu_us $bp)
    sleep "$SECS"
    t2=$(date +%s.%N); a2=$(cpu_us $ap); p2=$(cpu_us $pp); f2=$(cpu_us $rp); i2=$(cpu_us $ip)
    [ "$bp" = 0 ] || b2=$(cpu_us $bp)
    local ar af pr pf
    ar=$(kib $ap RssAnon); af=$(kib $ap RssFile); pr=$(kib $pp RssAnon); pf=$(kib $pp RssFile)
    kill $ap $pp $rp $ip
    wait $ap $pp 2>/dev/null || true
    wait $rp || { echo "bench_raw_get failed: $(cat "$TMP/raw$r.err")" >&2; exit 1; }
    [ "$bp" = 0 ] || kill $bp
    local an pn bn fn
    bn=$(jq -c --argjson a "$t1" --argjson b "$t2" 'select(.kind=="get" and .vm=="vm_2" and .wall>=$a and .wall<=$b)' "$TMP/tl$r" | wc -l)
    an=$(jq -c --argjson a "$t1" --argjson b "$t2" 'select(.kind=="get" and .vm=="vm_0" and .wall>=$a and .wall<=$b)' "$TMP/tl$r" | wc -l)
    fn=$(jq -c --argjson a "$t1" --argjson b "$t2" 'select(.kind=="get" and .vm=="vm_3" and .wall>=$a and .wall<=$b)' "$TMP/tl$r" | wc -l)
    pn=$(jq -c --argjson a "$t1" --argjson b "$t2" 'select(.kind=="get" and .vm=="vm_1" and .wall>=$a and .wall<=$b)' "$TMP/tl$r" | wc -l)
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    PIDS=()
    # run agent_polls agent_cpu_us_per_poll agent_rssanon agent_rssfile py_polls py_cpu_us py_anon
    # py_file floor_polls floor_cpu_us_per_poll idle_agent_cpu_us_per_s
    # [agent_b_polls agent_b_cpu_us_per_poll]
    awk -v an="$an" -v ac=$((a2 - a1)) -v pn="$pn" -v pc=$((p2 - p1)) -v bn="$bn" \
        -v fn="$fn" -v fc=$((f2 - f1)) -v ic=$((i2 - i1)) -v t1="$t1" -v t2="$t2" \
        -v bc=$((b2 - b1)) -v bp="$bp" \
        -v ar="$ar" -v af="$af" -v pr="$pr" -v pf="$pf" -v r="$r" 'BEGIN {
        printf "%d %d %.1f %d %d %d %.1f %d %d %d %.1f %.1f", r, an, ac / (an ? an : 1), ar, af,
               pn, pc / (pn ? pn : 1), pr, pf, fn, fc / (fn ? fn : 1), ic / (t2 - t1)
        if (bp) printf " %d %.1f", bn, bc / (bn ? bn : 1)
        printf "\n" }'
}

echo "run agent_polls agent_cpu_us/poll agent_RssAnon_KiB agent_RssFile_KiB py_polls py_cpu_us/poll py_RssAnon_KiB py_RssFile_KiB floor_polls floor_cpu_us/poll idle_agent_cpu_us/s${AGENT_B:+ b_polls b_cpu_us/poll}"
for r in $(seq "$RUNS"); do one_run "$r"; done | tee "$TMP/results"
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
AC=$(awk '{print $3}' "$TMP/results" | med); PC=$(awk '{print $7}' "$TMP/results" | med)
AR=$(awk '{print $4}' "$TMP/results" | med); AF=$(awk '{print $5}' "$TMP/results" | med)
PR=$(awk '{print $8}' "$TMP/results" | med); PF=$(awk '{print $9}' "$TMP/results" | med)
FC=$(awk '{print $11}' "$TMP/results" | med); IC=$(awk '{print $12}' "$TMP/results" | med)
echo
echo "median of $RUNS runs, ${SECS}s each, one poll every ${IVL}s:"
printf "%-18s %14s %14s %14s\n" "" "CPU/poll" "RssAnon" "RssFile"
printf "%-18s %11s us %10s KiB %10s KiB\n" "schedcoord-agent" "$AC" "$AR" "$AF"
printf "%-18s %11s us %10s KiB %10s KiB\n" "python sample" "$PC" "$PR" "$PF"
printf "%-18s %11s us   (bench_raw_get: bare socket, no HTTP library, no heartbeat)\n" "floor" "$FC"
printf "%-18s %11s us/s (the agent polling once an hour: heartbeat + leader message)\n" "agent liveness" "$IC"
if [ -n "${AGENT_B:-}" ]; then
    printf "%-18s %11s us   (AGENT_B=%s)\n" "agent B" "$(awk '{print $14}' "$TMP/results" | med)" "$AGENT_B"
fi
awk -v a="$AC" -v p="$PC" -v f="$FC" 'BEGIN {
    printf "CPU ratio (python / agent): %.1fx\n", (a > 0 ? p / a : 0)
    printf "CPU ratio (python / floor): %.1fx  (the most any agent polling over TCP could reach here)\n", (f > 0 ? p / f : 0)
    printf "CPU ratio (agent / floor): %.2fx  (issue 11 goal: within 2x at the default settings)\n", (f > 0 ? a / f : 0) }'
