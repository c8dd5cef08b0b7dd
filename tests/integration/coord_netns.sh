#!/usr/bin/env bash
# End to end across a network, as the README deploys it: three "VMs", each a network namespace
# of its own (veth into one bridge), each running schedcoord-agent and schedcoord-coordinator
# over CURVE on its own address — no loopback between VMs. imds-sim listens on the bridge. A
# maintenance rollout goes through with one approval POST per event, one fault domain at a
# time, every VM recovered; vm_0's coordinator leads and the agents of the other VMs reached
# it over the bridge; the coordinators of vm_1 and vm_2 follow. A coordinator given --insecure
# with these (non-local) endpoints refuses to start.
# Needs root and network namespaces (CI has both); skipped (77) otherwise.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    echo "SKIP: needs root and iproute2 (ip netns)"
    exit 77
fi
N=3
X=$((20 + $$ % 200)) # 10.213.X.0/24: one subnet per run
BR="scbr$$"
NS=()
for ((i = 0; i < N; i++)); do NS+=("sc$$v$i"); done
HOOKLOG="$TMP/hooks.log"
TL="$TMP/timeline.jsonl"
: >"$HOOKLOG"

sc_on_exit() {
    sc_kill "${PIDS[@]}"
    PIDS=()
    for ns in "${NS[@]}"; do
        # anything still inside would keep the namespace (and its veth) alive
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
    ip link del "$BR" 2>/dev/null || true
}
sc_on_fail() {
    echo "--- vm_0 coordinator log (tail)"
    tail -20 "$TMP/coord_0.err" 2>/dev/null || true
}

# the network: a bridge with 10.213.X.1 (imds-sim), VM i at 10.213.X.(10+i)
ip link add "$BR" type bridge || { echo "SKIP: cannot create a bridge"; exit 77; }
ip addr add "10.213.$X.1/24" dev "$BR"
ip link set "$BR" up
for ((i = 0; i < N; i++)); do
    ip netns add "${NS[$i]}" || { echo "SKIP: cannot create a network namespace"; exit 77; }
    ip link add "scv$$$i" type veth peer name "scp$$$i"
    ip link set "scv$$$i" master "$BR" up
    ip link set "scp$$$i" netns "${NS[$i]}"
    ip -n "${NS[$i]}" link set "scp$$$i" name eth0
    ip -n "${NS[$i]}" addr add "10.213.$X.$((10 + i))/24" dev eth0
    ip -n "${NS[$i]}" link set eth0 up
    ip -n "${NS[$i]}" link set lo up
done
MEMBERS=""
for ((i = 0; i < N; i++)); do MEMBERS+="${MEMBERS:+,}vm_$i=10.213.$X.$((10 + i)):7700"; done
inns() { local i=$1; shift; ip netns exec "${NS[$i]}" "$@"; }

# imds-sim on the bridge address
"$SC_BIN/imds-sim" --listen "10.213.$X.1:0" --vms $N --fault-domains $N --time-scale 100 \
    --complete-after 100 --timeline "$TL" >"$TMP/sim.out" 2>"$TMP/sim.err" &
SIM_PID=$!
PIDS+=("$SIM_PID")
sim_up() { grep -q '^listening on ' "$TMP/sim.out"; }
sc_wait_until 10 sim_up || fail "imds-sim did not start: $(tail -3 "$TMP/sim.err")"
PORT=$(sed -n 's/^listening on [0-9.]*:\([0-9]*\)$/\1/p' "$TMP/sim.out" | head -1)
B="http://10.213.$X.1:$PORT"
for ((i = 0; i < N; i++)); do
    sc_wait_until 5 inns "$i" curl -sf -o /dev/null "$B/control/state" ||
        fail "vm_$i cannot reach imds-sim over the bridge"
done
ok "3 VMs in their own network namespaces, reaching imds-sim over a bridge"

# plain text is for one machine only: these endpoints are on three
rc=0
timeout 30 ip netns exec "${NS[0]}" "$SC_BIN/schedcoord-coordinator" --name vm_0 --imds-url "$B/vm_0" \
    --members "$MEMBERS" --state-dir "$TMP/insecure" --insecure >/dev/null 2>"$TMP/insecure.err" || rc=$?
[ "$rc" -eq 2 ] && grep -qF "member vm_0's endpoint tcp://10.213.$X.10:7700 is not on this machine" "$TMP/insecure.err" ||
    fail "--insecure with remote endpoints: exit $rc: $(cat "$TMP/insecure.err")"
ok "--insecure refused with endpoints on other hosts"

# CURVE keys, one coordinator and one agent per VM
K="$TMP/keys"
mkdir -p "$K"
: >"$K/keyring"
for ((i = 0; i < N; i++)); do
    "$SC_BIN/schedcoordctl" keygen --name "vm_$i" --out "$K" >>"$K/keyring" || fail "keygen vm_$i"
done
for ((i = 0; i < N; i++)); do
    mkdir -p "$TMP/agent_$i"
    cat >"$TMP/agent_$i/hook" <<HOOK
#!/bin/sh
echo "start \$SCHEDCOORD_PHASE vm_$i \$SCHEDCOORD_EVENT_ID \$(date +%s.%N)" >>"$HOOKLOG"
sleep 0.3
echo "end \$SCHEDCOORD_PHASE vm_$i \$SCHEDCOORD_EVENT_ID \$(date +%s.%N)" >>"$HOOKLOG"
HOOK
    chmod +x "$TMP/agent_$i/hook"
    # ip netns exec, not the inns function: $! must be the daemon itself (exec'ed in place)
    ip netns exec "${NS[$i]}" "$SC_BIN/schedcoord-coordinator" --name "vm_$i" --imds-url "$B/vm_$i" \
        --members "$MEMBERS" --state-dir "$TMP/coord_$i" --key "$K/vm_$i.key" --keys "$K/keyring" \
        --deadline-margin-s 1 --voters 1 >"$TMP/coord_$i.out" 2>"$TMP/coord_$i.err" &
    PIDS+=($!)
    COORD[i]=$!
    ip netns exec "${NS[$i]}" "$SC_BIN/schedcoord-agent" --name "vm_$i" --imds-url "$B/vm_$i" --members "$MEMBERS" \
        --state-dir "$TMP/agent_$i" --prepare-hook "$TMP/agent_$i/hook" \
        --recover-hook "$TMP/agent_$i/hook" --key "$K/vm_$i.key" --keys "$K/keyring" \
        --poll-interval 0.5 --standalone-after 600 --hook-timeout 30 --log-level warn \
        >"$TMP/agent_$i.out" 2>"$TMP/agent_$i.err" &
    PIDS+=($!)
done
ctl() { "$SC_BIN/schedcoordctl" --state-dir "$TMP/coord_0" "$@"; }
seen() { [ "$(ctl status --json 2>/dev/null | jq '[.members[] | select(.alive and .fault_domain >= 0)] | length')" = $N ]; }
sc_wait_until 30 seen || fail "vm_0's coordinator does not see every member: $(ctl status --json | jq -c .members)"
[ "$(ctl status --json | jq -r '.role')" = leader ] || fail "vm_0 does not lead"
for ((i = 1; i < N; i++)); do
    r=$("$SC_BIN/schedcoordctl" --state-dir "$TMP/coord_$i" status --json | jq -r .role)
    [ "$r" = follower ] || fail "vm_$i's coordinator: $r"
done
# vm_0's coordinator has connections from the other VMs' addresses, over the bridge
peers=$(inns 0 ss -Htn state established '( sport = :7700 )' | awk '{print $4}' | sed 's/:[0-9]*$//' | sort -u | tr '\n' ' ')
for ((i = 1; i < N; i++)); do
    [[ " $peers" == *" 10.213.$X.$((10 + i)) "* ]] || fail "no connection from vm_$i to vm_0's coordinator: $peers"
done
ok "over CURVE across the bridge: vm_0 leads, vm_1 and vm_2 follow, every agent reports"

# 30000 simulated s of notice (300 s, more than the test lasts): every event is ours to approve
curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
done3() { [ "$(grep -c '"kind": *"completed"' "$TL" 2>/dev/null || true)" -ge 3 ]; }
sc_wait_until 90 done3 || fail "rollout not complete: $(ctl status)"
settled() { [ "$(grep -c '^end recover' "$HOOKLOG" || true)" -eq 3 ]; }
sc_wait_until 20 settled || fail "not every VM recovered: $(cat "$HOOKLOG")"
curl -sS "$B/control/state" >"$TMP/state.json"
python3 "$SC_SRC/tests/integration/coord/check.py" --timeline "$TL" --hooks "$HOOKLOG" \
    --state "$TMP/state.json" --fault-domains $N --events 3 --all-approved || fail "safety check failed"
ok "rollout across the network: one POST per event, fault domains one at a time, all recovered"

for ((i = 0; i < N; i++)); do sc_stop "coordinator vm_$i" "${COORD[$i]}" "$TMP/coord_$i.err"; done
