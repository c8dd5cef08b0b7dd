#!/usr/bin/env bash
# Checks the Promela models of the election (tests/model/election.pml) and of membership
# changes (tests/model/membership.pml) with spin: each model must keep its properties in each
# checked configuration, and each broken variant must be caught (spin finds the violation), so
# the model is shown able to fail. One line per run: name, expected outcome, states stored,
# depth, seconds, verdict. Exits 1 when a run does not give what is expected (README.md:
# configurations, bounds, what is not checked).
#   tests/model/check.sh [MODEL=tests/model/election.pml [MEMBERSHIP=tests/model/membership.pml]]
set -euo pipefail
MODEL=$(realpath "${1:-$(dirname "$0")/election.pml}")
MEMBERSHIP=$(realpath "${2:-$(dirname "$0")/membership.pml}")
command -v spin >/dev/null || { echo "model: spin is not installed (apt-get install spin)"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SAFETY="-DMAXT=2 -DMAXL=4 -DNETMAX=4"
# the approval's answers, from a leader that has committed the drain (README, "Approvals"):
# two terms, the intent, its answers, a term entry and a rollback fit in 7 entries
APPROVAL="-DAPPROVAL -DNO_RESTART -DMAXT=2 -DMAXL=7 -DNETMAX=3"
# five members, one with another member list, one term (README, "Members that disagree")
MEMBERS="-DMEMBERS -DMAXT=1 -DMAXL=1 -DNETMAX=6"
# progress (`<> posted`, weak fairness) with one message lost and no crash: two terms suffice;
# with one crash and no loss: four (a crash can cost two terms and a handover). Both faults in
# one run take 7 minutes (README, "Liveness"), so the suite checks them one at a time.
LIVE_DROP="-DLIVE -DCRASHES=0 -DDROPS=1 -DMAXT=2 -DMAXL=6"
LIVE_CRASH="-DLIVE -DCRASHES=1 -DDROPS=0 -DMAXT=4 -DMAXL=7"
# membership.pml: configuration entries, one change at a time, from leader 0 of term 1 with
# voters 0-2 and non-voter 3; a second term and three more entries (README, "Membership
# changes": MAXL=5 takes 9 M states, 50 s of search; MAXT=3 more than 11 M)
CONF="-DMAXT=2 -DMAXL=4 -DNETMAX=4"
# how each kind of run is compiled and searched (timings in README.md): safety runs look for
# assertion violations exhaustively; LIVE runs for acceptance cycles under weak fairness.
# States are stored whole (no -DCOLLAPSE) where that halves the search time for the same
# memory (1.2 GB for `safety`); -O1 or -O0 where -O2's compilation costs more than it saves
# (the LIVE pan.c is large: 60 s at -O2, 10 s at -O1, 4 s at -O0; the others 12, 4 and 1.5 s).
# Runs of a few seconds' search (a broken variant stops at its first error) are compiled at
# -O0 and get a hash table of 2^20 slots (8 MB; 2^25 is 256 MB, which takes a second to
# allocate and clear): a smaller table is slower only when it holds many more states.
CC_SAFE="-O2 -DSAFETY -DMEMLIM=8192"
CC_FAST="-O1 -DSAFETY -DMEMLIM=8192"
CC_TINY="-O0 -DSAFETY -DMEMLIM=8192"
CC_LIVE="-O1 -DNFAIR=3 -DMEMLIM=8192"
CC_LIVE_SMALL="-O0 -DNFAIR=3 -DCOLLAPSE -DMEMLIM=8192"
PAN_SAFE="-m100000 -c1 -w25"
PAN_MID="-m100000 -c1 -w22"
PAN_SMALL="-m100000 -c1 -w20"
PAN_LIVE="-a -f -m300000 -w24"
PAN_LIVE_SMALL="-a -f -m300000 -w20"
# name | expect (ok: no error; caught: an error) | spin -D flags | cc flags | pan flags
# [| the model: membership (membership.pml); election.pml when absent]
RUNS=(
    "safety|ok|$SAFETY|$CC_SAFE|$PAN_SAFE"
    "approval|ok|$APPROVAL|$CC_FAST|$PAN_MID"
    "members|ok|$MEMBERS|$CC_TINY|$PAN_SMALL"
    "live_drop|ok|$LIVE_DROP|$CC_LIVE_SMALL|$PAN_LIVE_SMALL"
    "live_crash|ok|$LIVE_CRASH|$CC_LIVE|$PAN_LIVE"
    "stable|ok|-DSTABLE|$CC_TINY|$PAN_SMALL"
    "broken_vote|caught|$SAFETY -DBROKEN_VOTE|$CC_TINY|$PAN_SMALL"
    "broken_act_uncommitted|caught|$SAFETY -DBROKEN_ACT_UNCOMMITTED|$CC_TINY|$PAN_SMALL"
    "broken_unknown_failed|caught|$APPROVAL -DBROKEN_UNKNOWN_FAILED|$CC_TINY|$PAN_SMALL"
    "broken_any_answer|caught|$APPROVAL -DBROKEN_ANY_ANSWER|$CC_TINY|$PAN_SMALL"
    "broken_no_digest|caught|$MEMBERS -DBROKEN_NO_DIGEST|$CC_TINY|$PAN_SMALL"
    "broken_no_prevote|caught|-DSTABLE -DBROKEN_NO_PREVOTE|$CC_TINY|$PAN_SMALL"
    "broken_no_handover|caught|-DLIVE -DCRASHES=0 -DDROPS=0 -DMAXT=2 -DMAXL=6 -DBROKEN_NO_HANDOVER|$CC_LIVE_SMALL|$PAN_LIVE_SMALL"
    "conf|ok|$CONF|$CC_FAST|$PAN_MID|membership"
    "conf_reach|caught|$CONF -DREACH|$CC_TINY|$PAN_SMALL|membership"
    "broken_two_changes|caught|$CONF -DBROKEN_TWO_CHANGES|$CC_TINY|$PAN_SMALL|membership"
)
bad=0
for r in "${RUNS[@]}"; do
    IFS='|' read -r name expect flags ccflags pan which <<<"$r"
    model=$MODEL
    [ "${which:-}" != membership ] || model=$MEMBERSHIP
    d="$TMP/$name"
    mkdir -p "$d"
    start=$(date +%s)
    # shellcheck disable=SC2086 # flags are separate words
    (cd "$d" && spin -a $flags "$model" >spin.out 2>&1 &&
        cc $ccflags -o pan pan.c >cc.out 2>&1 &&
        ./pan $pan >pan.out 2>&1) || true
    secs=$(($(date +%s) - start))
    out="$d/pan.out"
    [ -s "$out" ] || { echo "model: $name: no verdict: $(tail -3 "$d"/spin.out "$d"/cc.out 2>/dev/null)"; bad=1; continue; }
    # a search cut short (depth bound, memory) proves nothing: it is not a pass
    cut='max search depth too small|out of memory|reached -DMEMLIM bound'
    if grep -qE "$cut" "$out"; then
        echo "model: $name: search incomplete: $(grep -m1 -E "$cut" "$out")"
        bad=1
        continue
    fi
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
