#!/usr/bin/env bash
# The main job on an embedded default: a local availability set on loopback (simulated IMDS,
# agents, coordinator) going through a maintenance. Installs what is missing, builds into
# build/, runs, cleans up after itself.
#
# What it shows: imds-sim with 6 VMs in 3 fault domains (time 60x faster), one
# schedcoord-agent per VM with the example hooks of deploy/hooks/, one coordinator; Azure
# rolls a Reboot out over the set (POST /control/maintenance); the live view
# (schedcoordctl status) shows fault domain after fault domain drained, approved once,
# rebooted, recovered; then the decision history from the coordinator's SQLite store.
#   SC_DEMO_BUILD=dir   use another build directory (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${SC_DEMO_BUILD:-build}
./deploy/install-deps.sh
if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
BIN=$ROOT/$BUILD/bin
for p in imds-sim schedcoord-agent schedcoord-coordinator schedcoordctl; do
  [[ -x $BIN/$p ]] || { echo "demo: $BIN/$p was not built" >&2; exit 1; }
done

unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY
export NO_PROXY='*' no_proxy='*'
DIR=$(mktemp -d /tmp/schedcoord-demo.XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
ctl() { "$BIN/schedcoordctl" --state-dir "$DIR/coord" "$@"; }

N=6
FDS=3
say "imds-sim: $N VMs in $FDS fault domains, time 60x faster (a 15-minute notice takes 15 s)"
"$BIN/imds-sim" --listen 127.0.0.1:0 --vms $N --fault-domains $FDS --time-scale 60 \
  --complete-after 120 --timeline "$DIR/timeline.jsonl" >"$DIR/sim.out" 2>"$DIR/sim.err" &
PIDS+=($!)
for _ in $(seq 100); do grep -q '^listening on ' "$DIR/sim.out" && break; sleep 0.05; done
PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$DIR/sim.out")
[[ -n $PORT ]] || { echo "demo: imds-sim did not start: $(cat "$DIR/sim.err")" >&2; exit 1; }
B=http://127.0.0.1:$PORT
echo "IMDS of vm_i: $B/vm_i/metadata/scheduledevents"

read -r -a ports <<<"$(python3 -c '
import socket
s=[socket.socket() for _ in range('$N')]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')"
MEMBERS=""
for ((i = 0; i < N; i++)); do MEMBERS+="${MEMBERS:+,}vm_$i=127.0.0.1:${ports[$i]}"; done

say "$N agents (deploy/hooks/prepare and recover, 1 s each) and one coordinator (vm_0)"
echo "(--insecure: plain-text ZeroMQ, acceptable only because everything is on loopback)"
for ((i = 0; i < N; i++)); do
  mkdir -p "$DIR/vm_$i"
  for phase in prepare recover; do
    printf '#!/bin/sh\nSCHEDCOORD_VM=vm_%s SCHEDCOORD_DEMO_LOG=%s/hooks.log exec %s/deploy/hooks/%s\n' \
      "$i" "$DIR" "$ROOT" "$phase" >"$DIR/vm_$i/$phase"
    chmod +x "$DIR/vm_$i/$phase"
  done
  "$BIN/schedcoord-agent" --name "vm_$i" --imds-url "$B/vm_$i" --members "$MEMBERS" \
    --state-dir "$DIR/vm_$i" --prepare-hook "$DIR/vm_$i/prepare" \
    --recover-hook "$DIR/vm_$i/recover" --insecure --standalone-after 600 \
    --log-level warn 2>"$DIR/vm_$i/agent.log" &
  PIDS+=($!)
done
"$BIN/schedcoord-coordinator" --name vm_0 --imds-url "$B/vm_0" --members "$MEMBERS" \
  --state-dir "$DIR/coord" --insecure --deadline-margin-s 5 2>"$DIR/coord.log" &
PIDS+=($!)
for _ in $(seq 100); do
  n=$(ctl status --json 2>/dev/null | jq '[.members[] | select(.alive and .fault_domain >= 0)] | length' 2>/dev/null || echo 0)
  [[ $n -eq $N ]] && break
  sleep 0.2
done
ctl status

say "Azure schedules a Reboot rollout: one event per fault domain, the next after the previous completed"
curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":900,"DurationInSeconds":60}' \
  "$B/control/maintenance" | jq -c .
say "live view (schedcoordctl status --json, one line per change): member:state, by fault domain"
last=""
end=$((SECONDS + 150))
while ((SECONDS < end)); do
  line=$(ctl status --json 2>/dev/null | jq -r '
    [.members | group_by(.fault_domain)[] |
      "FD\(.[0].fault_domain): " + ([.[] | "\(.name)=\(.state)"] | join(" "))] | join("  |  ")' 2>/dev/null || true)
  evs=$(ctl status --json 2>/dev/null | jq -r '[.events[] | select(.ended_how == null) |
      "\(.EventId[0:8]) \(.status) approval=\(.approval)"] | join("; ")' 2>/dev/null || true)
  if [[ -n $line && "$line $evs" != "$last" ]]; then
    printf '%s  %s\n%10s%s\n' "$(date +%H:%M:%S)" "$line" "" "${evs:-(no open event)}"
    last="$line $evs"
  fi
  done_n=$(grep -c '"completed"' "$DIR/timeline.jsonl" 2>/dev/null || true)
  rec=$(grep -c 'recover done' "$DIR/hooks.log" 2>/dev/null || true)
  ((done_n >= FDS && rec >= N)) && break
  sleep 0.5
done
ctl status

say "what the hooks did (deploy/hooks/*, one line per step)"
cat "$DIR/hooks.log"
say "what the simulated fabric saw: approvals and impacts"
jq -r 'select(.kind == "post" or .kind == "started" or .kind == "impact_start" or .kind == "completed")
  | "\(.wall | strftime("%H:%M:%S"))  \(.kind)\t\(.vm // "")\t\(.event // (.events | join(",")))\t\(.how // .status // "")"' \
  "$DIR/timeline.jsonl" | grep -v '^.*get' || true
say "history: the decision log from the coordinator's store (schedcoordctl history)"
ctl history | cut -c1-160
done_n=$(grep -c '"completed"' "$DIR/timeline.jsonl" || true)
posts=$(grep -c '"kind": *"post"' "$DIR/timeline.jsonl" || true)
say "done: $done_n events completed, $posts approval POSTs, fault domains drained one at a time"
