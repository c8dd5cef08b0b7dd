#!/usr/bin/env bash
# Benchmark: the whole rollout's duration with the coordinator (approve as soon as a fault
# domain is drained) vs. waiting for NotBefore (what happens without approvals), measured in
# simulated time from the simulator's timeline (first "created" to last "completed").
#   tests/bench/coord_rollout.sh [BUILD_DIR=build] [VMS=6] [NOTICE_S=900] [TIME_SCALE=100]
# Every figure is simulated seconds (real seconds x TIME_SCALE), so hook times (0.3 s real)
# count TIME_SCALE times: the coordinated figure is an upper bound.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
VMS=${2:-6}
NOTICE=${3:-900}
X=${4:-100}
export SC_BIN=$ROOT/$BUILD/bin SC_SRC=$ROOT
BODY="{\"EventType\":\"Reboot\",\"NoticeSeconds\":$NOTICE,\"DurationInSeconds\":30}"

span() { # timeline -> simulated seconds from first created to last completed
    jq -s '(([.[] | select(.kind == "completed") | .sim] | max) - ([.[] | select(.kind == "created") | .sim] | min)) | round' "$1"
}

# 1. coordinated
export SC_TMP=$(mktemp -d)
(
    . "$ROOT/tests/integration/coord/lib.sh"
    sim_start --vms "$VMS" --fault-domains 3 --time-scale "$X" --complete-after 100
    set_start "$VMS"
    coord_start
    wait_for 30 all_members_seen "$VMS" || fail "members not seen"
    curl -sS -f -d "$BODY" "$B/control/maintenance" >/dev/null
    wait_for 600 completed_ge 3 || fail "not complete"
    wait_for 30 hooks_settled || true
    echo "coordinated: $(span "$TL") simulated s"
) | tail -1 >"$SC_TMP.coord"
COORD_OUT=$SC_TMP.coord
rm -rf "$SC_TMP"

# 2. no approvals: every event waits for its NotBefore
export SC_TMP=$(mktemp -d)
(
    . "$ROOT/tests/integration/coord/lib.sh"
    sim_start --vms "$VMS" --fault-domains 3 --time-scale "$X" --complete-after 100
    curl -sS -f -d "$BODY" "$B/control/maintenance" >/dev/null
    wait_for 600 completed_ge 3 || fail "not complete"
    echo "NotBefore:   $(span "$TL") simulated s"
) | tail -1 >"$SC_TMP.nb"
rm -rf "$SC_TMP"
echo "rollout of $VMS VMs in 3 fault domains, Reboot with $NOTICE s notice, x$X:"
cat "$COORD_OUT"
cat "$SC_TMP.nb"
