# Partitions for the election's fault tests (issue 11). Sourced after coord/lib.sh, whose
# helpers it keeps (cst, leader, one_leader, check, hooks_settled...) and whose daemon starters
# it replaces by the same daemons run inside network namespaces.
#
# Each VM i is a network namespace with two links:
#   eth0  10.213.X.(10+i) on the bridge scI$$, where imds-sim listens (10.213.X.1): every VM
#         reaches its IMDS whatever the partition, as on Azure (IMDS is on the host);
#   eth1  10.214.X.(10+i) on the bridge scA$$ (the VMs' network): the members' endpoints.
# ns_partition VM... moves those VMs' eth1 onto a second bridge, scB$$: each side then talks
# to its own side only (established TCP connections stay open; their packets are lost, as in a
# real partition); ns_heal moves them back. Everything is deleted on exit, even on failure.
# Needs root and iproute2; skipped (77) otherwise.
#
# NS_RELAY=1 (before ns_setup; the nemesis' slow links, tests/nemesis/relay.py): each VM's
# endpoint in --members is then 10.214.X.(110+i), on its namespace's lo (its own agent reaches
# it directly) and on a second namespace, its front (sc$$p<i>, one veth on scA$$, moved with the
# VM by ns_partition), where the relay listens and carries every connection from another VM on
# to the coordinator; ns_slow MS VM... makes the links among those VMs slow, ns_slow 0 fast.
# The VMs answer ARP only for their eth1 address (arp_ignore=1): the front answers for the
# endpoint.

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    echo "SKIP: needs root and iproute2 (ip netns)"
    exit 77
fi

# 10.213.X.0/24 and 10.214.X.0/24: one pair of subnets per run, X taken with a lock directory
# (ctest and the nemesis campaigns run several at once: two runs that picked the same X from
# their PIDs made "vm_0 cannot reach imds-sim", nemesis seed 19); a lock whose owner is gone
# is taken over; a subnet still on a link of a run killed before its cleanup is skipped
# (coord_partition_minority, 2026-11-27: bridges of six killed runs held 10.213.X.1)
ns_take_subnet() {
    local k x d used
    used=$(ip -br addr show 2>/dev/null)
    for ((k = 0; k < 200; k++)); do
        x=$((20 + ($$ + k) % 200))
        d=/tmp/sc-netns-subnet.$x
        # an address of it still on a link (a run killed before its cleanup): not that one
        grep -qE "(^|[[:space:]])10\.21[34]\.$x\." <<<"$used" && continue
        if mkdir "$d" 2>/dev/null; then
            echo $$ >"$d/pid"
            NS_X=$x
            return 0
        fi
        if [ -s "$d/pid" ] && ! kill -0 "$(cat "$d/pid")" 2>/dev/null; then
            rm -rf "$d" # its run ended without its cleanup
            ((k--))
        fi
    done
    echo "SKIP: no free test subnet (200 runs at once?)"
    exit 77
}
ns_take_subnet
NS_BRI="scI$$"
NS_BRA="scA$$"
NS_BRB="scB$$"
NS=()
NS_N=0
NS_EP=()      # vm_i's coordinator address (its endpoint in MEMBERS)
NS_FRONT=()   # NS_RELAY=1: vm_i's front namespace
RELAY_PID=""

sc_on_exit() {
    sc_kill "${AGENT_PIDS[@]}" "$COORD_PID" "${CPIDS[@]}"
    sc_kill "$RELAY_PID" # its sockets keep the fronts' namespaces alive
    local ns
    for ns in "${NS[@]}" "${NS_FRONT[@]}"; do
        # anything still inside would keep the namespace (and its veths) alive
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
    ip link del "$NS_BRI" 2>/dev/null || true
    ip link del "$NS_BRA" 2>/dev/null || true
    ip link del "$NS_BRB" 2>/dev/null || true
    rm -rf "/tmp/sc-netns-subnet.$NS_X"
}

# ns_setup N: N VMs' namespaces and the three bridges; sets MEMBERS (with each VM's fault
# domain, i % FDS; FDS default 3) and makes their CURVE keys (plain text is for one machine)
ns_setup() {
    local n=$1 fds=${FDS:-3} i br
    NS_N=$n
    for br in "$NS_BRI" "$NS_BRA" "$NS_BRB"; do
        ip link add "$br" type bridge || { echo "SKIP: cannot create a bridge"; exit 77; }
        ip link set "$br" up
    done
    ip addr add "10.213.$NS_X.1/24" dev "$NS_BRI"
    MEMBERS=""
    for ((i = 0; i < n; i++)); do
        NS[i]="sc$$v$i"
        ip netns add "${NS[$i]}" || { echo "SKIP: cannot create a network namespace"; exit 77; }
        ip link add "sci$$x$i" type veth peer name "scj$$x$i"
        ip link add "sca$$x$i" type veth peer name "scb$$x$i"
        ip link set "sci$$x$i" master "$NS_BRI" up
        ip link set "sca$$x$i" master "$NS_BRA" up
        ip link set "scj$$x$i" netns "${NS[$i]}"
        ip link set "scb$$x$i" netns "${NS[$i]}"
        ip -n "${NS[$i]}" link set "scj$$x$i" name eth0
        ip -n "${NS[$i]}" link set "scb$$x$i" name eth1
        ip -n "${NS[$i]}" addr add "10.213.$NS_X.$((10 + i))/24" dev eth0
        ip -n "${NS[$i]}" addr add "10.214.$NS_X.$((10 + i))/24" dev eth1
        ip -n "${NS[$i]}" link set eth0 up
        ip -n "${NS[$i]}" link set eth1 up
        ip -n "${NS[$i]}" link set lo up
        NS_EP[i]="10.214.$NS_X.$((10 + i))"
        [ "${NS_RELAY:-0}" = 0 ] || ns_front "$i"
        MEMBERS+="${MEMBERS:+,}vm_$i=${NS_EP[$i]}:7700/$((i % fds))"
    done
    keys_make "$n"
    [ "${NS_RELAY:-0}" = 0 ] || ns_relay_start
}

# ns_front I: vm_I's front namespace (NS_RELAY=1): its endpoint address there and on vm_I's lo
ns_front() {
    local i=$1 ep="10.214.$NS_X.$((110 + $1))"
    NS_EP[i]=$ep
    NS_FRONT[i]="sc$$p$i"
    ip netns add "${NS_FRONT[$i]}" || { echo "SKIP: cannot create a network namespace"; exit 77; }
    ip link add "scq$$x$i" type veth peer name "scr$$x$i"
    ip link set "scq$$x$i" master "$NS_BRA" up
    ip link set "scr$$x$i" netns "${NS_FRONT[$i]}"
    ip -n "${NS_FRONT[$i]}" link set "scr$$x$i" name eth0
    ip -n "${NS_FRONT[$i]}" addr add "$ep/24" dev eth0
    ip -n "${NS_FRONT[$i]}" link set eth0 up
    ip -n "${NS_FRONT[$i]}" link set lo up
    ip -n "${NS[$i]}" addr add "$ep/32" dev lo
    ip netns exec "${NS[$i]}" sysctl -q -w net.ipv4.conf.all.arp_ignore=1 \
        net.ipv4.conf.all.arp_announce=2 >/dev/null
}

# ns_relay_start: the relay in front of every VM's coordinator (tests/nemesis/relay.py), no
# delay; its log in $TMP/relay.log, its control file $TMP/relay.ctl (ns_slow)
ns_relay_start() {
    local i fronts=()
    for ((i = 0; i < NS_N; i++)); do fronts+=(--front "${NS_FRONT[$i]},${NS[$i]},${NS_EP[$i]},$i"); done
    echo 0 >"$TMP/relay.ctl"
    : >>"$TMP/relay.log"
    python3 "$SC_SRC/tests/nemesis/relay.py" --ctl "$TMP/relay.ctl" --log "$TMP/relay.log" \
        --src-prefix "10.214.$NS_X." "${fronts[@]}" 2>>"$TMP/relay.err" &
    RELAY_PID=$!
    relay_ready() { grep -q ' ready: ' "$TMP/relay.log"; }
    wait_for 10 relay_ready || fail "relay did not start: $(tail -3 "$TMP/relay.err")"
}

# ns_slow MS VM_INDEX...: the links among those VMs hold every chunk MS ms each way (NS_RELAY=1);
# ns_slow 0: no delay
ns_slow() {
    echo "$*" >"$TMP/relay.ctl.new"
    mv "$TMP/relay.ctl.new" "$TMP/relay.ctl"
}

# sim_start ARGS...: imds-sim on the IMDS bridge -> PORT, B; every VM reaches it
sim_start() {
    "$SC_BIN/imds-sim" --listen "10.213.$NS_X.1:0" --timeline "$TL" "$@" >"$TMP/sim.out" 2>>"$TMP/sim.err" &
    SIM_PID=$!
    PIDS+=("$SIM_PID")
    sim_up() { grep -q '^listening on ' "$TMP/sim.out"; }
    wait_for 10 sim_up || fail "imds-sim did not start: $(tail -3 "$TMP/sim.err")"
    PORT=$(sed -n 's/^listening on [0-9.]*:\([0-9]*\)$/\1/p' "$TMP/sim.out" | head -1)
    B="http://10.213.$NS_X.1:$PORT"
    local i
    for ((i = 0; i < NS_N; i++)); do
        wait_for 5 ip netns exec "${NS[$i]}" curl -sf -o /dev/null "$B/control/state" ||
            fail "vm_$i cannot reach imds-sim"
    done
}

# agent_start I: vm_I's agent in its namespace (as lib.sh's, hooks $TMP/agent_I/hook)
agent_start() {
    mkdir -p "$TMP/agent_$1"
    [ -x "$TMP/agent_$1/hook" ] || write_hook "$1" "${HOOK_SLEEP:-0.3}"
    # ip netns exec execs the daemon in place: $! is the daemon
    # shellcheck disable=SC2046 # sec_args prints separate words
    ip netns exec "${NS[$1]}" "$SC_BIN/schedcoord-agent" --name "vm_$1" --imds-url "$B/vm_$1" \
        --members "$MEMBERS" --state-dir "$TMP/agent_$1" --prepare-hook "$TMP/agent_$1/hook" \
        --recover-hook "$TMP/agent_$1/hook" $(sec_args "vm_$1") --poll-interval "${POLL:-0.5}" \
        $(fast_agent) --standalone-after 600 --hook-timeout 30 --log-level warn \
        >>"$TMP/agent_$1.out" 2>>"$TMP/agent_$1.err" &
    AGENT_PIDS[$1]=$!
}

# coord_i_start I [ARGS...]: vm_I's coordinator in its namespace (vm_0's in $TMP/coord, as
# lib.sh's coord_start; the others' in $TMP/coord_I)
coord_i_start() {
    local i=$1 dir err
    shift
    dir=$(coord_dir "vm_$i")
    err=$(coord_err "vm_$i")
    # shellcheck disable=SC2046 # sec_args prints separate words
    ip netns exec "${NS[$i]}" "$SC_BIN/schedcoord-coordinator" --name "vm_$i" --imds-url "$B/vm_$i" \
        --members "$MEMBERS" --state-dir "$dir" $(sec_args "vm_$i") --deadline-margin-s 1 $(fast_coord) "$@" \
        >>"${err%.err}.out" 2>>"$err" &
    if [ "$i" = 0 ]; then COORD_PID=$!; else CPIDS[i]=$!; fi
}

# ns_start: every VM's agent and coordinator (ARGS to the coordinators)
ns_start() {
    local i
    for ((i = 0; i < NS_N; i++)); do
        agent_start "$i"
        coord_i_start "$i" "$@"
    done
}

# ns_election HOOK_FN: six VMs in three fault domains (imds-sim x100), each VM's hook made by
# HOOK_FN I (write_hook I 2, prepare_hold I...), every daemon started (members are not declared
# dead for 60 s: the partitions do not take VMs away), and waits for the three voters to elect
# a leader -> L (vm_l), its term T
ns_election() {
    local i
    ns_setup 6
    sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
    for ((i = 0; i < 6; i++)); do mkdir -p "$TMP/agent_$i" && "$@" "$i"; done
    ns_start --dead-after 60
    leader_wait 40 3 ||
        fail "no leader: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, leader, term, may_act}'; done)"
    L=$LEADER
    T=$(cst "$L" | jq .term)
    l=${L#vm_}
}

# ns_settle_lead: once a rollout's first prepare started, a leader whose own VM drains hands
# the lead over (docs/design.md, "Handover"): waits for a voter that leads, may act and is not
# being drained, and sets L, T and l from it
ns_settle_lead() {
    s_settled() {
        local i
        for i in 0 1 2; do
            if leading "vm_$i" && ! grep -q "^start prepare vm_$i " "$HOOKLOG"; then
                L=vm_$i
                T=$(cst "$L" | jq .term)
                l=$i
                return 0
            fi
        done
        return 1
    }
    wait_for 20 s_settled ||
        fail "no leader outside the drain: $(for i in 0 1 2; do cst "vm_$i" | jq -c '{self, role, term, may_act}'; done)"
}

# ns_partition VM_INDEX...: those VMs on one side, the others on the other
ns_partition() {
    local i
    for i in "$@"; do
        ip link set "sca$$x$i" master "$NS_BRB"
        [ -z "${NS_FRONT[$i]:-}" ] || ip link set "scq$$x$i" master "$NS_BRB"
    done
    echo "$(date -u +%H:%M:%S.%3N) partition: {$*} apart" >>"$TMP/netns.log"
}
# ns_heal: every VM back on one network
ns_heal() {
    local i
    for ((i = 0; i < NS_N; i++)); do
        ip link set "sca$$x$i" master "$NS_BRA"
        [ -z "${NS_FRONT[$i]:-}" ] || ip link set "scq$$x$i" master "$NS_BRA"
    done
    echo "$(date -u +%H:%M:%S.%3N) healed" >>"$TMP/netns.log"
}
# ns_can I J: vm_I reaches vm_J's coordinator port over the VMs' network
ns_can() {
    ip netns exec "${NS[$1]}" timeout 1 bash -c "exec 3<>/dev/tcp/${NS_EP[$2]}/7700" 2>/dev/null
}

# role_of VM: its coordinator's role and the leader it names ("voter vm_1", "leader vm_0")
role_of() { cst "$1" | jq -r '.role + " " + (if .role == "leader" then .self else .leader // "" end)'; }
# leading VM: VM leads and may act
leading() { [ "$(cst "$1" | jq -r '.role + " " + (.may_act | tostring)')" = "leader true" ]; }
