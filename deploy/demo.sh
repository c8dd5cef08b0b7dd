#!/usr/bin/env bash
# The main job on an embedded default: a local availability set on loopback (simulated IMDS,
# agents, coordinator) going through a maintenance. Installs what is missing, builds into
# build/, runs (about 30 s), cleans up after itself.
#
# What it shows: imds-sim with 6 VMs in 3 fault domains (time 60x faster), one
# schedcoord-agent per VM with the example hooks of deploy/hooks/, one coordinator. Azure
# rolls a Reboot out over the set (POST /control/maintenance: one event per fault domain, the
# next once the previous completed) and, at the same time, schedules a Redeploy of vm_4 (fault
# domain 1) due together with fault domain 0's Reboot. The live view (schedcoordctl watch:
# redrawn in place on a terminal, one line per change otherwise) shows fault domain after
# fault domain drained, approved once, rebooted, recovered. Then a summary per event (notice,
# drain, approval, impact, recover) beside what Azure alone would have done (each event at its
# NotBefore, nothing drained: vm_4 down with fault domain 0), and where to look next.
#   SC_DEMO_BUILD=dir   use another build directory (default build; relative to the source)
#   SC_DEMO_KEEP=1      leave the set running at the end, to try schedcoordctl on it
#   SC_DEMO_LO=addr     the loopback address of the members' endpoints (default 127.0.0.1)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${SC_DEMO_BUILD:-build}
[[ $BUILD == /* ]] || BUILD=$ROOT/$BUILD
LO=${SC_DEMO_LO:-127.0.0.1}
./deploy/install-deps.sh
if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
BIN=$BUILD/bin
for p in imds-sim schedcoord-agent schedcoord-coordinator schedcoordctl; do
  [[ -x $BIN/$p ]] || { echo "demo: $BIN/$p was not built" >&2; exit 1; }
done

unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY
export NO_PROXY='*' no_proxy='*'
DIR=$(mktemp -d /tmp/schedcoord-demo.XXXXXX)
PIDS=()
cleanup() {
  local p
  if [[ ${SC_DEMO_KEEP:-} == 1 && ${DEMO_DONE:-} == 1 ]]; then return; fi
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
ctl() { "$BIN/schedcoordctl" --state-dir "$DIR/coord" "$@"; }

N=6
FDS=3
SCALE=60
say "imds-sim: $N VMs in $FDS fault domains, time ${SCALE}x faster (a 15-minute notice takes 15 s)"
"$BIN/imds-sim" --listen 127.0.0.1:0 --vms $N --fault-domains $FDS --time-scale $SCALE \
  --complete-after 120 --timeline "$DIR/timeline.jsonl" >"$DIR/sim.out" 2>"$DIR/sim.err" &
PIDS+=($!)
for _ in $(seq 100); do grep -q '^listening on ' "$DIR/sim.out" && break; sleep 0.05; done
PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$DIR/sim.out")
[[ -n $PORT ]] || { echo "demo: imds-sim did not start: $(cat "$DIR/sim.err")" >&2; exit 1; }
B=http://127.0.0.1:$PORT
echo "IMDS of vm_i: $B/vm_i/metadata/scheduledevents"

read -r -a ports <<<"$(python3 -c '
import socket, sys
s=[socket.socket() for _ in range('$N')]
[x.bind((sys.argv[1],0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))' "$LO")"
MEMBERS=""
# NAME=HOST:PORT/FD: imds-sim puts vm_i in fault domain i % FDS; the voters are spread over them
for ((i = 0; i < N; i++)); do MEMBERS+="${MEMBERS:+,}vm_$i=$LO:${ports[$i]}/$((i % FDS))"; done

say "$N agents (deploy/hooks/prepare and recover, 1 s each) and $N coordinators, 3 of them voters"
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
# vm_0's coordinator keeps $DIR/coord (the one this demo looks through), vm_i's $DIR/coord_i
cdir() { [[ $1 == 0 ]] && echo "$DIR/coord" || echo "$DIR/coord_$1"; }
coord_up() {
  "$BIN/schedcoord-coordinator" --name "vm_$1" --imds-url "$B/vm_$1" --members "$MEMBERS" \
    --state-dir "$(cdir "$1")" --insecure --deadline-margin-s 5 2>>"$(cdir "$1").log" &
  CPID[$1]=$!
  PIDS+=($!)
}
CPID=()
for ((i = 0; i < N; i++)); do coord_up "$i"; done
# every member alive with its fault domain: a status line "vm_i FD UD STATE yes"
for _ in $(seq 150); do
  n=$(ctl status 2>/dev/null | grep -cE '^vm_[0-9]+ +[0-9]+ +[0-9]+ +[a-z]+ +yes' || true)
  [[ $n -eq $N ]] && break
  sleep 0.2
done
[[ $n -eq $N ]] || { echo "demo: only $n of $N members reported: $(tail -5 "$DIR/coord.log")" >&2; exit 1; }
ctl watch --once

say "Azure schedules a Reboot rollout (one event per fault domain, each once the previous completed)"
echo "and, due at the same moment as fault domain 0's Reboot, a Redeploy of vm_4 (fault domain 1)"
curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":900,"DurationInSeconds":60}' \
  "$B/control/maintenance"
echo
curl -sS -f -o /dev/null -d '{"EventType":"Redeploy","Resources":["vm_4"],"NoticeSeconds":900}' \
  "$B/control/events"
for _ in $(seq 100); do ctl events 2>/dev/null | grep '^(no events)' >/dev/null || break; sleep 0.1; done

say "live view: schedcoordctl watch (until nothing is in flight)"
timeout --foreground 150 "$BIN/schedcoordctl" --state-dir "$DIR/coord" watch --interval 0.5 --until-idle=2 ||
  echo "demo: the live view ended early (exit $?)" >&2
events=$(grep -c '"kind": *"created"' "$DIR/timeline.jsonl" || true)
done_n=$(grep -c '"kind": *"completed"' "$DIR/timeline.jsonl" || true)
[[ $done_n -eq $events ]] || { echo "demo: only $done_n of $events events completed" >&2; exit 1; }

say "summary: what schedcoord did, and what Azure alone would have done"
ctl history --json >"$DIR/history.json"
python3 "$ROOT/deploy/demo-summary.py" --timeline "$DIR/timeline.jsonl" \
  --history "$DIR/history.json" --time-scale $SCALE

say "kill the leader: kill -9 of its coordinator, as a VM lost at once"
leader_of() {
  "$BIN/schedcoordctl" --state-dir "$(cdir "$1")" status --json 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin).get("leader") or "")' 2>/dev/null
}
L=""
for _ in $(seq 100); do
  L=$(leader_of 0)
  [[ -n $L ]] && [[ $(leader_of 1) == "$L" ]] && [[ $(leader_of 2) == "$L" ]] && break
  sleep 0.1
done
[[ -n $L ]] || { echo "demo: no leader" >&2; exit 1; }
li=${L#vm_}
oi=$(((li + 1) % 3)) # another voter, to look through
echo "the voters follow $L; killing its coordinator (its agent and its VM stay up)"
t0=$(date +%s%N)
kill -9 "${CPID[$li]}"
wait "${CPID[$li]}" 2>/dev/null || true
NL=""
while (($(date +%s%N) - t0 < 30000000000)); do # 30 s at most (a busy machine)
  NL=$(leader_of "$oi")
  [[ -n $NL && $NL != "$L" ]] && break
  NL=""
  sleep 0.05
done
[[ -n $NL ]] || { echo "demo: no new leader after $L was killed" >&2; exit 1; }
echo "$NL leads after $(((($(date +%s%N) - t0) / 1000000))) ms (an election timeout of 1 to 2 s and one round of votes)"
E=$(curl -sS -f -d '{"EventType":"Reboot","Resources":["vm_5"],"NoticeSeconds":900,"DurationInSeconds":60}' \
  "$B/control/events" | python3 -c 'import json, sys; print(json.load(sys.stdin)["EventId"])')
echo "a Reboot of vm_5 ($E) comes in; $NL drains it and approves it:"
for _ in $(seq 300); do
  grep -q "\"kind\": *\"completed\".*$E\|$E.*\"kind\": *\"completed\"" "$DIR/timeline.jsonl" && break
  sleep 0.1
done
"$BIN/schedcoordctl" --state-dir "$(cdir "$oi")" history --json | python3 -c '
import json, sys
for h in json.load(sys.stdin):
    if sys.argv[1] in json.dumps(h["data"]) and h["kind"] in ("prepare_ordered", "approval_intent", "event_started", "recover_ordered"):
        print("  term %d  %-16s %s" % (h["term"], h["kind"], h["reason"]))' "$E"
coord_up "$li"
for _ in $(seq 100); do [[ $(leader_of "$li") == "$NL" ]] && break; sleep 0.1; done
echo "$L's coordinator started again: it follows $(leader_of "$li") (PreVote: a member back does not depose a healthy leader)"

say "where to look next"
if [[ ${SC_DEMO_KEEP:-} == 1 ]]; then
  echo "The set is still running (SC_DEMO_KEEP=1): DIR is $DIR/coord, schedcoordctl is in $BIN."
else
  echo "On your VMs DIR is /var/lib/schedcoord/coord (run as root). This set is stopped and its"
  echo "files removed: SC_DEMO_KEEP=1 ./deploy/demo.sh keeps it running to try these on it."
fi
cat <<EOF
  schedcoordctl --state-dir DIR status    the members and events now (--json: all of it)
  schedcoordctl --state-dir DIR watch     this live view (--plain: a line per change; --once)
  schedcoordctl --state-dir DIR history   every decision, why, and each hook's output
  schedcoordctl --state-dir DIR metrics   Prometheus text (schedcoord-metrics.socket: port 9466)
  the hook log                            ${SC_DEMO_KEEP:+$DIR/hooks.log: }what deploy/hooks/prepare and recover did;
                                          your drain goes in such hooks: deploy/hooks/ has a
                                          load balancer, Pacemaker, Patroni, Kubernetes and
                                          health-wait hook, and chain to run several
  README.md                               "Running it on a set" (schedcoordctl), "Hooks",
                                          "Deploy on Azure", "Notifications", "Metrics";
                                          docs/planner.md (the rules)
EOF
if [[ ${SC_DEMO_KEEP:-} == 1 ]]; then
  printf 'kill %s; rm -rf %s\n' "${PIDS[*]}" "$DIR" >"$DIR/stop.sh"
  echo "Stop it: sh $DIR/stop.sh"
  DEMO_DONE=1
fi
