#!/usr/bin/env bash
# One randomized fault run (issue 11): tests/nemesis/seed.sh SEED [SECONDS]
#
# Nine VMs in three fault domains, each a network namespace (tests/integration/coord/netns.sh:
# IMDS always reachable, the VMs' network cut at will), each running schedcoord-agent and
# schedcoord-coordinator over CURVE; voters vm_0, vm_1, vm_2. For SECONDS (default 60) the
# nemesis, its every choice drawn from SEED (bash's RANDOM, seeded), mixes
#   - kill -9 of a coordinator or an agent, started again 1-4 s later;
#   - SIGSTOP of a coordinator for 0.5-4 s (a Freeze of its VM), then SIGCONT;
#   - partitions: 1 to 4 VMs cut from the others for 2-6 s, then healed;
#   - IMDS faults: 500s, requests held 2 s, a malformed event in the document;
#   - events of every type: a Reboot rollout over the set, Reboot and Redeploy of one VM or
#     of a fault domain, short and long Freezes, User reboots, Preempt and Terminate of a
#     non-voting VM (gone for good: its daemons are killed once the platform deleted it).
# Members are declared dead after 15 s (--dead-after), longer than any fault lasts here: every
# VM is drained. Then everything is healed and started again, the run waits until every event is over and
# every hook settled, and the history is checked from outside:
#   - check.py over the simulator's timeline and the hook log: one successful POST per event
#     and none after it, approval only after every VM of the event was drained, one fault
#     domain at a time, every drained VM recovered;
#   - no event forgotten: every event the simulator made completed or was cancelled;
#   - one_leader.py over the coordinators' logs: never two coordinators that may act at once;
#   - no daemon died on its own, no sanitizer report, every daemon left stops cleanly.
# Prints the fault schedule as it goes, then "nemesis seed S: V violations, E events
# completed (A approved by the coordinators, F started by the platform)". Exit 0 when V is 0.
# The random choices (the schedule) are the seed's; the processes' timing is not: a seed that
# failed once is kept in tests/nemesis/regressions/ and run again by run.sh.
SEED=${1:?usage: seed.sh SEED [SECONDS]}
DURATION=${2:-60}
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"
. "$SC_SRC/tests/integration/coord/netns.sh"

N=9
VOTERS_N=3
SCHED="$TMP/schedule.log"
KILLED="$TMP/killed"
: >"$SCHED"
: >"$KILLED"
VIOL=()
declare -A STATE # "c3" / "a3": up, stopped (coordinator), dead; "vm3": gone when deleted

viol() { VIOL+=("$*"); echo "VIOLATION: $*" >&2; }
t0=$(date +%s%3N)
el() { echo $(($(date +%s%3N) - t0)); } # ms since the start
say() { local t; t=$(el); printf '%3d.%03d %s\n' $((t / 1000)) $((t % 1000)) "$*" | tee -a "$SCHED"; }
pid_of() { if [ "$1" = c ]; then coord_pid "vm_$2"; else echo "${AGENT_PIDS[$2]}"; fi; }

# d_kill c|a I / d_start c|a I / d_stop I / d_cont I: one daemon of vm_I
d_kill() {
    local p
    p=$(pid_of "$1" "$2")
    [ "$1" = a ] || echo "vm_$2 $(date +%s.%N)" >>"$KILLED"
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    STATE[$1$2]=dead
}
d_start() {
    # snapshots and compaction all along: a coordinator killed for a few seconds usually comes
    # back behind the leader's log base and gets its snapshot (in several chunks)
    if [ "$1" = c ]; then
        coord_i_start "$2" --dead-after 15 --snapshot-every 5 --log-keep 0 --snapshot-chunk 2048
    else agent_start "$2"; fi
    STATE[$1$2]=up
}
d_stop() {
    kill -STOP "$(coord_pid "vm_$1")"
    echo "vm_$1 $(date +%s.%N)" >>"$KILLED" # it cannot act while stopped
    STATE[c$1]=stopped
}
d_cont() {
    kill -CONT "$(coord_pid "vm_$1")"
    STATE[c$1]=up
}

# ---- the world ---------------------------------------------------------------------------
ns_setup $N
# Time runs 20 times faster: Azure's 15-minute notice (900 s) is 45 s here, a Spot eviction's
# 30 s is 1.5 s, a Reboot's impact of 30 s is 1.5 s. The faults are as dense as the notice is
# short (a failover takes 1-2 s, a new leader's start grace up to 5 s): an event the
# coordinators could not approve in time is started by the platform at NotBefore, as on Azure.
sim_start --vms $N --fault-domains 3 --time-scale 20 --complete-after 40 --fault-timeout 2 \
    --seed "$SEED" --rate-limit 0
for ((i = 0; i < N; i++)); do mkdir -p "$TMP/agent_$i" && write_hook "$i" 0.5; done
for ((i = 0; i < N; i++)); do
    d_start a "$i"
    d_start c "$i"
done
wait_for 60 leader $VOTERS_N >/dev/null ||
    fail "no leader: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, term, may_act}'; done)"
say "seed $SEED: $N VMs, leader $(leader $VOTERS_N); faults for $DURATION s"

# ---- the nemesis ---------------------------------------------------------------------------
# pending actions: "TIME ACTION ARGS" (seconds after t0), run when due
PENDING=()
later() { PENDING+=("$(($(el) + $1)) ${*:2}"); } # later MS ACTION ARGS
busy() { [ "${STATE[$1]:-up}" != up ]; } # a daemon already down or stopped is left alone
cut_until=0
evicted=()
ev_post() {
    local id
    id=$(curl -sS -f -d "$1" "$B/control/events" | jq -r .EventId) || { say "event refused: $1"; return; }
    say "event $id $1"
}
vm_alive() { [[ " ${evicted[*]} " != *" $1 "* ]]; }
random_vm() { # V: a VM not evicted (nor about to be); in this shell: RANDOM is the seed's
    for _ in 1 2 3 4 5 6 7 8; do
        V=$((RANDOM % N))
        vm_alive "$V" && return
    done
    V=0
}

nemesis_step() {
    local what v d now members k r=()
    now=$(el)
    # the step's draws, all made whatever it then does (a daemon found busy skips its action,
    # not its draws): the sequence stays the seed's
    for k in 0 1 2 3 4 5 6 7 8 9 10 11 12; do r[k]=$RANDOM; done
    what=$((r[0] % 100))
    random_vm
    v=$V
    if ((what < 18)); then
        busy "c$v" || { say "kill -9 coordinator vm_$v"; d_kill c "$v"; later $((1000 + (r[1] % 30) * 100)) start c "$v"; }
    elif ((what < 26)); then
        busy "a$v" || { say "kill -9 agent vm_$v"; d_kill a "$v"; later $((1000 + (r[2] % 30) * 100)) start a "$v"; }
    elif ((what < 40)); then
        d=$((500 + (r[3] % 35) * 100))
        busy "c$v" || { say "SIGSTOP coordinator vm_$v for $d ms"; d_stop "$v"; later "$d" cont "$v"; }
    elif ((what < 52)); then
        if ((now > cut_until)); then
            members=()
            k=$((1 + (r[4] % 4)))
            for ((j = 0; j < k; j++)); do members+=($(((r[5] >> (4 * j)) % N))); done
            mapfile -t members < <(printf '%s\n' "${members[@]}" | sort -un)
            d=$((2 + (r[6] % 5)))
            say "partition: {${members[*]/#/vm_}} cut off for $d s"
            ns_partition "${members[@]}"
            cut_until=$((now + d * 1000 + 1000))
            later $((d * 1000)) heal
        fi
    elif ((what < 60)); then
        case $((r[7] % 3)) in
        0) d='{"vm":"vm_'$v'","answer":500,"count":'$((1 + (r[8] % 5)))'}' ;;
        1) d='{"vm":"vm_'$v'","answer":"timeout","count":1}' ;;
        2) d='{"vm":"vm_'$v'","answer":"bad_event","count":'$((1 + (r[9] % 3)))'}' ;;
        esac
        curl -sS -f -d "$d" "$B/control/faults" >/dev/null && say "IMDS fault $d"
    else
        case $((r[10] % 10)) in
        0 | 1) ev_post '{"EventType":"Reboot","Resources":["vm_'$v'"],"NoticeSeconds":900,"DurationInSeconds":30}' ;;
        2) ev_post '{"EventType":"Redeploy","Resources":["vm_'$v'"],"NoticeSeconds":900,"DurationInSeconds":60}' ;;
        3)
            members=()
            for ((j = v % 3; j < N; j += 3)); do vm_alive "$j" && members+=("\"vm_$j\""); done
            [ ${#members[@]} -eq 0 ] || ev_post '{"EventType":"Reboot","Resources":['"$(IFS=,; echo "${members[*]}")"'],"NoticeSeconds":900,"DurationInSeconds":30}'
            ;;
        4) ev_post '{"EventType":"Freeze","Resources":["vm_'$v'"],"NoticeSeconds":900,"DurationInSeconds":5}' ;;
        5) ev_post '{"EventType":"Freeze","Resources":["vm_'$v'"],"NoticeSeconds":900,"DurationInSeconds":20}' ;;
        6) ev_post '{"EventType":"Reboot","Resources":["vm_'$v'"],"EventSource":"User","NoticeSeconds":900,"DurationInSeconds":30}' ;;
        7 | 8)
            # a Spot eviction or a deletion of a non-voter, at most two per run: gone for good
            if ((v >= VOTERS_N && ${#evicted[@]} < 2)); then
                evicted+=("$v")
                if (((r[11] % 2))); then
                    ev_post '{"EventType":"Preempt","Resources":["vm_'$v'"],"NoticeSeconds":30,"DurationInSeconds":-1}'
                else
                    ev_post '{"EventType":"Terminate","Resources":["vm_'$v'"],"NoticeSeconds":300,"DurationInSeconds":-1}'
                fi
            fi
            ;;
        9)
            if (((r[12] % 3) == 0)); then
                curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":900,"DurationInSeconds":30}' \
                    "$B/control/maintenance" >/dev/null && say "maintenance: a Reboot rollout over the set"
            fi
            ;;
        esac
    fi
}

# actions due, and VMs the platform deleted (their daemons die with them)
housekeeping() {
    local now keep=() p t a b c i
    now=$(el)
    for p in "${PENDING[@]}"; do
        read -r t a b c <<<"$p"
        if ((t <= now)); then
            case $a in
            start) [ "${STATE[vm$c]:-}" = gone ] || { say "start $([ "$b" = c ] && echo coordinator || echo agent) vm_$c"; d_start "$b" "$c"; } ;;
            cont) [ "${STATE[c$b]}" != stopped ] || { say "SIGCONT coordinator vm_$b"; d_cont "$b"; } ;;
            heal) say "partition healed"; ns_heal ;;
            esac
        else
            keep+=("$p")
        fi
    done
    PENDING=("${keep[@]}")
    local deleted=" "
    # one read of the platform's state per round, not one per evicted VM
    [ "${#evicted[@]}" -eq 0 ] ||
        deleted+="$(curl -sS "$B/control/state" | jq -r '[.vms[] | select(.deleted) | .name] | join(" ")' 2>/dev/null || true) "
    for i in "${evicted[@]}"; do
        [ "${STATE[vm$i]:-}" != gone ] || continue
        if [[ "$deleted" == *" vm_$i "* ]]; then
            say "vm_$i deleted by the platform: its daemons are gone"
            [ "${STATE[c$i]}" != stopped ] || d_cont "$i"
            [ "${STATE[c$i]}" = dead ] || d_kill c "$i"
            [ "${STATE[a$i]}" = dead ] || d_kill a "$i"
            STATE[vm$i]=gone
        fi
    done
    # a daemon that died on its own
    for ((i = 0; i < N; i++)); do
        for b in a c; do
            p=$(pid_of "$b" "$i")
            if [ "${STATE[$b$i]}" != dead ] && ! kill -0 "$p" 2>/dev/null; then
                rc=0
                wait "$p" 2>/dev/null || rc=$?
                viol "$([ "$b" = c ] && echo coordinator || echo agent) vm_$i died on its own (exit $rc)"
                STATE[$b$i]=dead
            fi
        done
    done
}

curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":900,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null && say "maintenance: a Reboot rollout over the set"
# The choices are drawn from RANDOM in this shell only (a $(...) subshell would reseed it),
# from the seed on: the same seed makes the same schedule (the timing of processes varies).
RANDOM=$SEED
next=0
while (($(el) < DURATION * 1000)); do
    if (($(el) >= next)); then
        nemesis_step
        next=$(($(el) + 500 + $((RANDOM % 20)) * 100))
    fi
    housekeeping
    sleep 0.2
done

# ---- the end: everything healed and up again, every event over -----------------------------
say "faults over: healing, starting what is down"
ns_heal
for p in "${PENDING[@]}"; do
    read -r t a b c <<<"$p"
    [ "$a" != cont ] || [ "${STATE[c$b]}" != stopped ] || d_cont "$b"
done
PENDING=()
for ((i = 0; i < N; i++)); do
    [ "${STATE[vm$i]:-}" != gone ] || continue
    [ "${STATE[c$i]}" != dead ] || d_start c "$i"
    [ "${STATE[a$i]}" != dead ] || d_start a "$i"
done
all_over() {
    housekeeping
    curl -sS "$B/control/state" | jq -e '[.events[] | select(.EventStatus != "Completed" and .EventStatus != "Cancelled")] | length == 0' >/dev/null
}
wait_for 180 all_over || viol "events not over 180 s after the faults: $(curl -sS "$B/control/state" | jq -c '[.events[] | select(.EventStatus != "Completed" and .EventStatus != "Cancelled") | {id: .EventId, type: .EventType, status: .EventStatus, res: .Resources}]')"
say "every event over"

# ---- the checks ----------------------------------------------------------------------------
# The VMs of an event over are recovered after it: the check is run again until it passes
# (every drained VM recovered, hooks idle) or 60 s have passed; what it says then stands.
checked() {
    housekeeping
    curl -sS "$B/control/state" >"$TMP/state.json"
    hooks_idle && python3 "$SC_SRC/tests/integration/coord/check.py" --timeline "$TL" --hooks "$HOOKLOG" \
        --state "$TMP/state.json" --fault-domains 3 >"$TMP/check.out" 2>&1
}
wait_for 60 checked || viol "check.py: $(cat "$TMP/check.out")"
say "$(tail -1 "$TMP/check.out")"
python3 "$SC_SRC/tests/integration/coord/one_leader.py" --killed "$KILLED" "$TMP"/coord*.err \
    >"$TMP/one_leader.out" 2>&1 || viol "one leader: $(cat "$TMP/one_leader.out")"
say "$(tail -1 "$TMP/one_leader.out")"
if grep -l -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$TMP"/*.err >/dev/null 2>&1; then
    viol "sanitizer reports in $(grep -l -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$TMP"/*.err | tr '\n' ' ')"
fi
# every daemon still up stops cleanly
for ((i = 0; i < N; i++)); do
    for b in a c; do
        [ "${STATE[$b$i]}" = up ] || continue
        p=$(pid_of "$b" "$i")
        rc=0
        kill "$p" 2>/dev/null || true
        wait "$p" || rc=$?
        [ "$rc" -eq 0 ] || viol "$([ "$b" = c ] && echo coordinator || echo agent) vm_$i exited $rc at the end"
        STATE[$b$i]=dead
    done
done
COORD_PID=""
CPIDS=()
AGENT_PIDS=()
completed=$(jq '[.events[] | select(.EventStatus == "Completed")] | length' "$TMP/state.json")
approved=$(jq -s '[.[] | select(.kind == "started" and .how == "approved")] | length' "$TL")
forced=$(jq -s '[.[] | select(.kind == "started" and .how != "approved")] | length' "$TL")
echo "nemesis seed $SEED: ${#VIOL[@]} violations, $completed events completed ($approved approved by the coordinators, $forced started by the platform)"
[ ${#VIOL[@]} -eq 0 ]
