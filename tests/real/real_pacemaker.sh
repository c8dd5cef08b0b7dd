#!/usr/bin/env bash
# The pacemaker hook (deploy/hooks/pacemaker) against a real Pacemaker cluster through a real
# rollout (issue 22): three VMs, each a network namespace (tests/integration/coord/netns.sh)
# and, inside it, a mount, UTS and PID namespace of its own whose PID 1 is
# tests/real/pacemaker/vm.sh: its own /run, /dev/shm (libqb's IPC), /etc/corosync,
# /var/lib/{corosync,pacemaker}, /etc/hosts; `corosync -f` and `pacemakerd -f` in the
# foreground, no systemd (Debian 12: Pacemaker 2.1.5, corosync 3.1.7 over knet, crmsh 4.4.1).
# Three Dummy resources (ocf:pacemaker:Dummy, in Debian's pacemaker-resource-agents), dI
# preferring vm_I (score 100, no stickiness): each leaves its VM when that VM is in standby and
# comes back when it is online.
# Each VM's agent runs inside the VM, its prepare and recover hook the example hook (with the
# settings file of an operator: PATH, shorter polls); the coordinators run in the VMs' network
# namespaces (vm_0 the one voter) and are not rebooted. imds-sim's --on-impact
# (tests/real/pacemaker/platform.sh) reboots a VM at its impact: its agent is stopped, the
# cluster's state as the VM sees it kept, then pacemakerd and corosync are stopped (SIGTERM);
# at the impact's end the VM boots: the agent first, corosync and Pacemaker only once
# the agent started its recover — the order that left the node in standby before the fix (crm
# node online failed, Pacemaker down, and was never tried again).
# A Reboot rollout over the three fault domains (one VM each) must complete with every rule kept
# (coord/check.py over the timeline and the hook log) and no recover failed; from outside (an
# observer polling crm_mon inside the VMs, tests/real/pacemaker/pcmk_watch.py, and the state at
# each impact's start; tests/real/pacemaker/pcmk_check.py): each VM in standby and without
# resources when its impact began, no resource on it while its impact ran, its recover started
# before its Pacemaker and ended once it was online and out of standby, its resource back.
# Shortened timings: corosync's token 1000 ms (default 3000), Pacemaker's dc-deadtime 2 s
# (default 20 s: the first election), the hook's polls 0.5 s (default 2), imds-sim x100 (an
# event ends 3 s after its start: the agent is stopped well before; pcmk_check.py checks that
# each recover started after its VM was down).
# SC_PCMK_HOOK=CMD runs CMD instead of the hook (e.g. true: the test must then fail).
# Needs root and network namespaces (skipped otherwise), and the packages of
# deploy/install-deps.sh --test (fails without them).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"
. "$SC_SRC/tests/integration/coord/netns.sh"

for c in corosync pacemakerd crm crm_mon cibadmin crm_attribute nsenter unshare; do
    command -v "$c" >/dev/null || fail "$c not installed: run deploy/install-deps.sh --test"
done
[ -x /usr/lib/ocf/resource.d/pacemaker/Dummy ] || fail "no ocf:pacemaker:Dummy (pacemaker-resource-agents)"
HOOK=${SC_PCMK_HOOK:-$SC_SRC/deploy/hooks/pacemaker}
VMSH="$SC_SRC/tests/real/pacemaker/vm.sh"
N=3
VM_PIDS=()
WATCH_PID=""
eval "ns_on_exit() $(declare -f sc_on_exit | tail -n +2)"
sc_on_exit() {
    sc_kill "$WATCH_PID"
    # the VMs' PID 1 (and through unshare --kill-child, all they run) go with their network
    # namespaces (ns_on_exit kills every process in them)
    ns_on_exit
}
sc_on_fail() {
    local i
    echo "--- coordinator log (tail)" && tail -15 "$TMP/coord.err" 2>/dev/null
    echo "--- hooks" && cat "$HOOKLOG"
    echo "--- platform" && cat "$TMP/platform.log" 2>/dev/null
    for ((i = 0; i < N; i++)); do
        echo "--- vm_$i" && cat "$TMP/node_$i/vm.log" 2>/dev/null
        tail -5 "$TMP/agent_$i.err" 2>/dev/null
    done
    echo "--- last sample" && tail -1 "$TMP/mon.jsonl" 2>/dev/null
}

ns_setup "$N"
sim_start --vms "$N" --fault-domains "$N" --time-scale 100 --complete-after 300 \
    --on-impact "$SC_SRC/tests/real/pacemaker/platform.sh $TMP"

# the cluster's configuration, the same on every node before its first start (a CIB file
# without its .sig is read, with a warning): no fencing (the nodes leave cleanly), a quick
# first election, dI preferring vm_I
CIB="$TMP/cib.xml"
cibadmin --empty >"$CIB"
(
    export CIB_file=$CIB
    crm_attribute -t crm_config -n stonith-enabled -v false
    crm_attribute -t crm_config -n dc-deadtime -v 2s
    for ((i = 0; i < N; i++)); do
        cibadmin -C -o resources -X "<primitive id=\"d$i\" class=\"ocf\" provider=\"pacemaker\" type=\"Dummy\"/>"
        cibadmin -C -o constraints -X "<rsc_location id=\"l$i\" rsc=\"d$i\" node=\"vm_$i\" score=\"100\"/>"
    done
) || fail "cannot write the CIB"

# vm_dir I: vm_I's files: corosync.conf (knet, the VMs' network), CIB, /etc/hosts, the
# agent's command line and its hook (the example, with its settings file)
vm_dir() {
    local i=$1 d="$TMP/node_$1" j
    mkdir -p "$d/etc" "$d/corosync" "$d/pacemaker/"{cib,pengine,blackbox,cores} "$d/log" "$TMP/agent_$i"
    cp "$CIB" "$d/pacemaker/cib/cib.xml"
    chown -R hacluster:haclient "$d/pacemaker" "$d/log"
    chmod 750 "$d/pacemaker/"*
    {
        echo "totem {"
        echo "    version: 2"
        echo "    cluster_name: sc$$"
        echo "    transport: knet"
        echo "    crypto_cipher: none"
        echo "    crypto_hash: none"
        echo "    token: 1000"
        echo "}"
        echo "nodelist {"
        for ((j = 0; j < N; j++)); do
            printf '    node {\n        ring0_addr: %s\n        name: vm_%s\n        nodeid: %s\n    }\n' \
                "${NS_EP[$j]}" "$j" "$((j + 1))"
        done
        echo "}"
        echo "quorum {"
        echo "    provider: corosync_votequorum"
        echo "}"
        echo "logging {"
        echo "    to_stderr: yes"
        echo "    to_syslog: no"
        echo "    timestamp: hires"
        echo "}"
    } >"$d/etc/corosync.conf"
    { echo "127.0.0.1 localhost" && for ((j = 0; j < N; j++)); do echo "${NS_EP[$j]} vm_$j"; done; } >"$d/hosts"
    echo "nameserver 127.0.0.1" >"$d/resolv.conf"
    {
        echo "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
        echo "SCHEDCOORD_PCMK_POLL=0.5"
        echo "SCHEDCOORD_PCMK_TIMEOUT=60"
    } >"$d/hooks.env"
    write_hook "$i" 0 none true "env SCHEDCOORD_HOOKS_ENV=$d/hooks.env $HOOK"
    # shellcheck disable=SC2046 # sec_args prints separate words
    cat >"$d/agent.sh" <<AGENT
#!/bin/sh
exec "$SC_BIN/schedcoord-agent" --name vm_$i --imds-url "$B/vm_$i" --members "$MEMBERS" \
    --state-dir "$TMP/agent_$i" --prepare-hook "$TMP/agent_$i/hook" --recover-hook "$TMP/agent_$i/hook" \
    $(sec_args "vm_$i") --poll-interval 0.5 $(fast_agent) --standalone-after 600 --hook-timeout 120 \
    --log-level warn >>"$TMP/agent_$i.out" 2>>"$TMP/agent_$i.err"
AGENT
    chmod +x "$d/agent.sh"
}

# vm_boot I: vm_I's PID 1 in its namespaces -> VM_PIDS[I] (unshare), node_I/init.pid (its
# PID 1 as seen from here, for nsenter)
vm_boot() {
    local i=$1 kids=""
    ip netns exec "${NS[$i]}" unshare --mount --uts --pid --fork --kill-child --mount-proc \
        bash "$VMSH" "$i" "$TMP/node_$i" "$HOOKLOG" 2>>"$TMP/node_$i/vm.err" &
    VM_PIDS[i]=$!
    s_init() { kids=$(cat "/proc/${VM_PIDS[$i]}/task/${VM_PIDS[$i]}/children" 2>/dev/null) && [ -n "$kids" ]; }
    wait_for 10 s_init || fail "vm_$i did not start: $(cat "$TMP/node_$i/vm.err")"
    echo "${kids%% *}" >"$TMP/node_$i/init.pid"
}

for ((i = 0; i < N; i++)); do
    vm_dir "$i"
    vm_boot "$i"
done
python3 "$SC_SRC/tests/real/pacemaker/pcmk_watch.py" --dir "$TMP" --vms "$N" --out "$TMP/mon.jsonl" \
    2>>"$TMP/watch.err" &
WATCH_PID=$!
: >>"$TMP/mon.jsonl"
# formed: the last sample shows every node online, out of standby, dI on vm_I
# (jq -e given no sample at all succeeds)
formed() {
    local s
    s=$(tail -1 "$TMP/mon.jsonl") && [ -n "$s" ] && jq -e --argjson n "$N" '[range($n) as $i | "vm_\($i)" as $v
        | .nodes[$v].online and (.nodes[$v].standby | not) and .rsc["d\($i)"] == [$v]] | all' <<<"$s" >/dev/null
}
wait_for 60 formed || fail "the cluster did not form: $(tail -1 "$TMP/mon.jsonl")"
ok "Pacemaker cluster of $N nodes, each in its own namespaces; d0..d$((N - 1)) on their nodes"

for ((i = 0; i < N; i++)); do coord_i_start "$i" --voters 1; done
seen() { [ "$(cst vm_0 | jq '[.members[] | select(.alive and .fault_domain >= 0)] | length')" = "$N" ]; }
wait_for 30 seen || fail "vm_0's coordinator does not see every member: $(cst vm_0 | jq -c .members)"

curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
wait_for 300 completed_ge "$N" || fail "rollout not complete: $(cst vm_0 | jq -c .events)"
wait_for 120 hooks_settled || fail "not every VM recovered: $(cat "$HOOKLOG")"
check "$N" --events "$N" --all-approved
! hist_has '.kind == "alert" and (.data.alert | test("_failed$"))' || fail "hooks failed: $(hist '.kind == "alert"')"
ok "Reboot rollout over $N fault domains: one approval per event, domains one at a time, all recovered, no hook failed"

# every VM home in a sample taken after the last recover ended, then the verdict
last=$(awk '$1 == "end" { t = $5 } END { print t }' "$HOOKLOG")
home_after() { formed && tail -1 "$TMP/mon.jsonl" | jq -e --argjson t "$last" '.t > $t' >/dev/null; }
wait_for 30 home_after || fail "the cluster not back as it was: $(tail -1 "$TMP/mon.jsonl")"
sc_kill "$WATCH_PID"
WATCH_PID=""
out=$(python3 "$SC_SRC/tests/real/pacemaker/pcmk_check.py" --dir "$TMP" --vms "$N") || fail "$out"
ok "from outside: $out"
for ((i = 0; i < N; i++)); do sc_stop "coordinator vm_$i" "$(coord_pid "vm_$i")" "$(coord_err "vm_$i")"; done
