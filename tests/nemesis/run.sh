#!/usr/bin/env bash
# Many randomized fault runs (issue 11): tests/nemesis/run.sh [--from S] [--count N]
#     [--duration SECONDS] [--regressions] [--record] [--out DIR]
#
# Runs seed.sh for seeds S .. S+N-1 (default 1 .. 10), one after the other (each needs most of
# this machine: 18 daemons under the sanitizers), each for SECONDS of faults (default 60), and
# with --regressions first every seed kept in tests/nemesis/regressions/. Each seed's files go
# to DIR/seed-S (default a new temporary directory; kept only for failed seeds). Prints one
# line per seed and its liveness accounting (the events the platform started at NotBefore, by
# cause: tests/integration/coord/liveness.py), then the totals of both; exits 1 when any seed
# had a violation (an unexplained NotBefore start is one). --record writes a
# failed seed to tests/nemesis/regressions/seed-S (with the first lines of what it found), to
# be committed with the fix: the suite runs every seed kept there (tests/CMakeLists.txt).
# Needs root (network namespaces) and a build: SC_BIN (default build/bin).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
from=1 count=10 duration=60 regress=0 record=0 out=""
while [ $# -gt 0 ]; do
    case $1 in
    --from) from=$2; shift ;;
    --count) count=$2; shift ;;
    --duration) duration=$2; shift ;;
    --regressions) regress=1 ;;
    --record) record=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--from S] [--count N] [--duration SECONDS] [--regressions] [--record] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
done
out=${out:-$(mktemp -d /tmp/nemesis.XXXXXX)}
mkdir -p "$out" || { echo "nemesis: cannot make $out" >&2; exit 2; }
export SC_BIN=${SC_BIN:-$src/build/bin} SC_SRC=$src
seeds=()
if [ "$regress" = 1 ]; then
    # seed-S: run by the suite too; liveness-seed-S (a liveness finding), open-seed-S (a
    # safety finding not fixed yet) and kept-seed-S (a fixed one the suite has no time for):
    # run here only
    for f in "$here"/regressions/seed-* "$here"/regressions/liveness-seed-* \
             "$here"/regressions/open-seed-* "$here"/regressions/kept-seed-*; do
        [ -e "$f" ] && seeds+=("${f##*seed-}")
    done
fi
for ((s = from; s < from + count; s++)); do seeds+=("$s"); done
bad=0 runs=0 events=0 at_nb=0 unexplained=0
declare -A cause # cause -> events explained by it, over every seed
for s in "${seeds[@]}"; do
    runs=$((runs + 1))
    log="$out/seed-$s.log"
    SC_TMP="$out/seed-$s" bash "$here/seed.sh" "$s" "$duration" >"$log" 2>&1
    rc=$?
    line=$(grep '^nemesis seed' "$log" | tail -1)
    echo "${line:-nemesis seed $s: no result (exit $rc, see $log)}"
    n=$(sed -n 's/.*violations, \([0-9]*\) events completed.*/\1/p' <<<"$line")
    events=$((events + ${n:-0})) # none when the seed gave no result
    # "liveness: N started at NotBefore: explained by C1: n1, C2: n2; unexplained: U"
    lv=$(grep '^ *[0-9.]* liveness: [0-9]* started at NotBefore' "$log" | tail -1 | sed 's/^ *[0-9.]* //')
    if [ -n "$lv" ]; then
        echo "    $lv"
        n=$(sed -n 's/^liveness: \([0-9]*\) started.*/\1/p' <<<"$lv")
        at_nb=$((at_nb + ${n:-0}))
        n=$(sed -n 's/.*; unexplained: \([0-9]*\)$/\1/p' <<<"$lv")
        unexplained=$((unexplained + ${n:-0}))
        while IFS=: read -r c n; do
            [ -n "$n" ] && cause[$c]=$((${cause[$c]:-0} + n))
        done < <(sed -n 's/.*explained by \(.*\); unexplained.*/\1/p' <<<"$lv" | tr ',' '\n' | sed 's/^ *//; /^nothing$/d')
    fi
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
        bad=$((bad + 1))
        grep -E '^(VIOLATION|FAIL)' "$log" | head -5 | sed 's/^/    /'
        if [ "$record" = 1 ]; then
            { echo "# found $(date -u +%Y-%m-%d) by tests/nemesis/run.sh --duration $duration"; grep '^VIOLATION' "$log" | head -5; } \
                >"$here/regressions/seed-$s"
        fi
    else
        rm -rf "$out/seed-$s"
    fi
done
echo "nemesis: $runs seeds of $duration s, $bad with violations, $events events completed; logs in $out"
explained=""
for c in "${!cause[@]}"; do explained+="${explained:+, }$c: ${cause[$c]}"; done
echo "nemesis: started at NotBefore: $at_nb; explained by ${explained:-nothing}; unexplained: $unexplained"
[ "$bad" -eq 0 ]
