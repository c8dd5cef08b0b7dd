#!/usr/bin/env bash
# Checks the Promela model of the election (tests/model/election.pml) with spin: the model
# must keep its properties in each checked configuration, and each broken variant must be
# caught (spin finds the violation), so the model is shown able to fail. One line per run:
# name, expected outcome, states stored, depth, seconds, verdict. Exits 1 when a run does not
# give what is expected (README.md: configurations, bounds, what is not checked).
#   tests/model/check.sh [MODEL=tests/model/election.pml]
set -euo pipefail
MODEL=$(realpath "${1:-$(dirname "$0")/election.pml}")
command -v spin >/dev/null || { echo "model: spin is not installed (apt-get install spin)"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SAFETY="-DMAXT=2 -DMAXL=4 -DNETMAX=4"
# progress (`<> posted`, weak fairness) with one message lost and no crash: two terms suffice
# (the full LIVE budget, a crash too, takes about 15 minutes: README, "Liveness")
LIVE="-DLIVE -DCRASHES=0 -DDROPS=1 -DMAXT=2 -DMAXL=6"
# name | expect (ok: no error; caught: an error) | spin -D flags
RUNS=(
    "safety|ok|$SAFETY"
    "live_drop|ok|$LIVE"
    "stable|ok|-DSTABLE"
    "broken_vote|caught|$SAFETY -DBROKEN_VOTE"
    "broken_act_uncommitted|caught|$SAFETY -DBROKEN_ACT_UNCOMMITTED"
    "broken_no_prevote|caught|-DSTABLE -DBROKEN_NO_PREVOTE"
)
bad=0
for r in "${RUNS[@]}"; do
    IFS='|' read -r name expect flags <<<"$r"
    d="$TMP/$name"
    mkdir -p "$d"
    start=$(date +%s)
    # safety: assertions, exhaustive; LIVE: acceptance cycles under weak fairness (the LIVE
    # pan.c is large: -O2 compiles for a minute, more than its search takes at -O0)
    case "$flags" in
    *-DLIVE*) ccflags="-O0 -DNFAIR=3" pan="-a -f -m200000" ;;
    *) ccflags="-O2 -DSAFETY" pan="-m100000 -c1" ;;
    esac
    # shellcheck disable=SC2086 # flags are separate words
    (cd "$d" && spin -a $flags "$MODEL" >spin.out 2>&1 &&
        cc $ccflags -DCOLLAPSE -DMEMLIM=4096 -o pan pan.c >cc.out 2>&1 &&
        ./pan $pan >pan.out 2>&1) || true
    secs=$(($(date +%s) - start))
    out="$d/pan.out"
    [ -s "$out" ] || { echo "model: $name: no verdict: $(tail -3 "$d"/spin.out "$d"/cc.out 2>/dev/null)"; bad=1; continue; }
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | head -1)
    states=$(awk '/states, stored/ {print $1; exit}' "$out")
    depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$out" | head -1)
    what=$(grep -m1 -E '^pan:[0-9]+: ' "$out" | sed 's/^pan:[0-9]*: //' || true)
    if { [ "$expect" = ok ] && [ "${errors:-1}" = 0 ]; } || { [ "$expect" = caught ] && [ "${errors:-0}" != 0 ]; }; then
        verdict=pass
    else
        verdict=FAIL
        bad=1
    fi
    printf 'model: %-24s expect %-6s states %-9s depth %-4s %4ss errors %s %s%s\n' "$name" "$expect" \
        "${states:-?}" "${depth:-?}" "$secs" "${errors:-?}" "$verdict" "${what:+: $what}"
done
exit "$bad"
