#!/usr/bin/env bash
# End to end: the example hooks of deploy/hooks/ (issue 12) as the agents' hooks, through a
# rollout and through failures, against imds-sim. Each VM's hook (write_hook's RUN) is an
# example run with its settings file (SCHEDCOORD_HOOKS_ENV, as an operator's
# /etc/schedcoord/hooks.env), whose PATH puts recording stubs of the commands it calls first
# (tests/integration/hooks/stub: Pacemaker, kubectl, Patroni's REST API, iptables...). Roles:
#   vm_0..2  a Patroni cluster (vm_0 leads) behind a load balancer: chain of lb-drain (probe
#            file on vm_0, vm_1; probe port, iptables, on vm_2) + patroni, recover the other
#            way round;
#   vm_3     pacemaker (crm) as the hook itself (its recover in the rollout finds Pacemaker
#            down twice, as after a reboot where the agent starts first, and waits for it);
#   vm_4     chain: pacemaker (pcs, found by itself) + wait-healthy (a command) on recover;
#   vm_5     chain: kubernetes + wait-healthy (a URL);
# every chain also runs two recorders of its stdin (00-event, 99-event) and holds a file
# whose name run-parts would skip (50-skip.sh).
#  1. A Reboot rollout over the 3 fault domains completes (coord/check.py, one approval per
#     event) and each VM's stubs saw exactly the calls its hooks must make, in order: standby
#     and the resources gone before the prepare ends, the Patroni leader switched over (judged
#     by who leads in /cluster: vm_0's POST answers 503 "status unknown", as Patroni 3.0.2 does
#     when its poll times out, and the switchover still happens), its name from Patroni's
#     configuration (vm_0) or /cluster's api_url (vm_1, vm_2), waited for as a lagging replica
#     on recover (/cluster's lag, then streaming in the leader's GET /patroni), cordon + drain / uncordon + wait, probe
#     file moved and back, iptables rule in and out, health polled until healthy; the same
#     event JSON reached the first and the last hook of every chain.
#  2. One failure per hook, each an event of its own: kubectl drain fails, the pacemaker
#     resources never leave (timeout), the Patroni switchover is refused (412): each prepare fails,
#     the chain stops there, the coordinator rolls back with the recover hook (uncordon,
#     online, the probe restored) and attempt 2 goes through; `pcs node unstandby` fails in
#     a recover (every time it is tried, until the hook's timeout): the chain still runs the
#     rest, then fails (alert recover_failed).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

HOOKS=$(cd "$SC_SRC/deploy/hooks" && pwd)
STUB=$(cd "$SC_SRC/tests/integration/hooks" && pwd)/stub
S="$TMP/stub"
mkdir -p "$S"
: >"$S/calls.log"
echo online >"$S/pcmk.vm_3"
echo online >"$S/pcmk.vm_4"
echo 2 >"$S/down.vm_3"
echo "vm_0 vm_1 vm_2" >"$S/patroni.members"
echo vm_0 >"$S/patroni.leader"
touch "$S/unknown.vm_0.switchover"
# vm_0's name from its Patroni configuration (vm_1's and vm_2's from /cluster: none)
printf 'scope: demo\nname: "vm_0" # this member\nrestapi:\n  name: not-this\n' >"$TMP/patroni-vm_0.yml"

# a hook that records its stdin (events.log), and one that must never run (a run-parts
# skipped name); probe_note VM: the probe's state (probes.log), at the end of a prepare
# shellcheck disable=SC2016 # (the hooks' own variables)
printf '#!/bin/sh\necho "$SCHEDCOORD_VM $SCHEDCOORD_PHASE $SCHEDCOORD_EVENT_ID $SCHEDCOORD_ATTEMPT ${0##*/} $(cat)" >>%s/events.log\n' \
    "$TMP" >"$TMP/recorder"
# shellcheck disable=SC2016
printf '#!/bin/sh\necho "$0" >>%s/skipped-ran\n' "$TMP" >"$TMP/skip"
cat >"$TMP/probe_note" <<NOTE
#!/bin/sh
p="$TMP/agent_\${1#vm_}/probe"
st=absent
[ ! -e "\$p" ] || st=up
[ ! -e "\$p.schedcoord-drained" ] || st=drained
echo "\$1 \$SCHEDCOORD_EVENT_ID \$SCHEDCOORD_ATTEMPT probe=\$st rules=\$(cat "$S/iptables.\$1" 2>/dev/null | wc -l)" >>"$TMP/probes.log"
NOTE
chmod +x "$TMP/recorder" "$TMP/skip" "$TMP/probe_note"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 6

# vm_hook I HOOK "CMD..." SETTING...: vm_I's agent runs the example HOOK with the settings
# file agent_I/hooks.env: PATH with the stubs of CMD... first, then SETTINGs (NAME=value)
vm_hook() {
    local d="$TMP/agent_$1" hook=$2 cmds=$3 c note=true
    mkdir -p "$d/bin"
    for c in $cmds; do ln -sf "$STUB" "$d/bin/$c"; done
    [ "$1" -gt 2 ] || note="$TMP/probe_note vm_$1"
    { echo "PATH=$d/bin:/usr/bin:/bin" && echo "STUB_STATE=$S" && printf '%s\n' "${@:4}"; } >"$d/hooks.env"
    write_hook "$1" 0 none "$note" "env SCHEDCOORD_HOOKS_ENV=$d/hooks.env $HOOKS/$hook"
}
# chain_dir I PHASE HOOK...: vm_I's PHASE.d runs the examples HOOK... in that order (10-, 20-
# ...) between the recorders 00-event and 99-event; and 50-skip.sh
chain_dir() {
    local d="$TMP/agent_$1/$2.d" n=10 h
    mkdir -p "$d"
    ln -s "$TMP/recorder" "$d/00-event"
    ln -s "$TMP/recorder" "$d/99-event"
    ln -s "$TMP/skip" "$d/50-skip.sh"
    for h in "${@:3}"; do
        ln -s "$HOOKS/$h" "$d/$n-$h"
        n=$((n + 10))
    done
    echo "SCHEDCOORD_CHAIN_${2^^}_DIR=$d"
}
LB_FAST="SCHEDCOORD_LB_PROBE_INTERVAL=0.2"
for i in 0 1 2; do
    if [ "$i" -lt 2 ]; then
        touch "$TMP/agent_$i/probe"
        lb=("SCHEDCOORD_LB_PROBE_FILE=$TMP/agent_$i/probe" "SCHEDCOORD_LB_PROBE_URL=http://probe.local$TMP/agent_$i/probe")
    else
        lb=("SCHEDCOORD_LB_PROBE_PORT=8080")
    fi
    vm_hook "$i" chain "curl iptables" "$(chain_dir "$i" prepare lb-drain patroni)" \
        "$(chain_dir "$i" recover patroni lb-drain)" "${lb[@]}" "$LB_FAST" "SCHEDCOORD_PATRONI_AUTH='admin:pa\"ss$i'" \
        "SCHEDCOORD_PATRONI_URL=http://vm_$i:8008" SCHEDCOORD_PATRONI_POLL=0.1 SCHEDCOORD_PATRONI_TIMEOUT=5 \
        "SCHEDCOORD_PATRONI_CONFIG=$TMP/patroni-vm_$i.yml"
done
vm_hook 3 pacemaker "crm crm_mon" SCHEDCOORD_PCMK_NODE=vm_3 SCHEDCOORD_PCMK_POLL=0.1 SCHEDCOORD_PCMK_TIMEOUT=2
vm_hook 4 chain "pcs crm_mon app-ready" "$(chain_dir 4 prepare pacemaker)" \
    "$(chain_dir 4 recover pacemaker wait-healthy)" SCHEDCOORD_PCMK_NODE=vm_4 SCHEDCOORD_PCMK_POLL=0.1 \
    SCHEDCOORD_PCMK_TIMEOUT=2 \
    SCHEDCOORD_HEALTH_CMD=app-ready SCHEDCOORD_HEALTH_INTERVAL=0.1
vm_hook 5 chain "kubectl curl" "$(chain_dir 5 prepare kubernetes wait-healthy)" \
    "$(chain_dir 5 recover kubernetes wait-healthy)" SCHEDCOORD_K8S_NODE=vm_5 \
    SCHEDCOORD_K8S_DRAIN_TIMEOUT=30 SCHEDCOORD_K8S_READY_TIMEOUT=30 \
    SCHEDCOORD_HEALTH_URL=http://app.local/healthz SCHEDCOORD_HEALTH_INTERVAL=0.1

coord_start --prepare-retry-s 1
wait_for 20 all_members_seen 6 || fail "members not all seen: $(ctl status --json | jq -c .members)"

# calls VM PHASE EVENT ATTEMPT: the stubs' calls of that hook run ("COMMAND ARGS => RESULT")
calls() { awk -v k="$1 $2 $3 $4 " 'index($0, k) == 1 { print substr($0, length(k) + 1) }' "$S/calls.log"; }
# expect VM PHASE EVENT ATTEMPT LINES...: those calls, exactly (LINES: lines, empty ones
# dropped)
expect() {
    local want got
    want=$(printf '%s\n' "${@:5}" | sed '/^$/d')
    got=$(calls "$1" "$2" "$3" "$4")
    [ "$got" = "$want" ] || fail "$1's $2 hook (event $3, attempt $4) made the calls
$got
expected
$want"
}
# event_of VM: the event of VM's first prepare
event_of() { awk -v v="$1" '$1 == "prepare" && $2 == v { print $3; exit }' "$HOOKENV"; }
# got_event VM PHASE EVENT ATTEMPT: the recorders of that chain run that got on stdin the very
# event JSON the agent gave the chain ("00-event 99-event " when both did)
got_event() {
    local json
    json=$(awk -v k="$2 $1 $3 " -v a="attempt=$4" 'index($0, k) == 1 && $5 == a { sub(/^[^{]*json=/, ""); print; exit }' "$HOOKENV")
    J="$json" awk -v k="$1 $2 $3 $4 " 'index($0, k) == 1 { n = $5; for (i = 0; i < 5; i++) sub(/^[^ ]+ /, ""); if ($0 == ENVIRON["J"]) printf "%s ", n }' "$TMP/events.log"
}
# lines REPEAT LINE...: the LINEs, REPEAT times
lines() {
    local n
    for ((n = 0; n < $1; n++)); do printf '%s\n' "${@:2}"; done
}
MON="crm_mon -1 --output-as=xml =>"
RULE="INPUT -s 168.63.129.16 -p tcp --dport 8080 -j REJECT --reject-with tcp-reset"
HEALTHZ=("curl GET http://app.local/healthz => 503" "curl GET http://app.local/healthz => 503" "curl GET http://app.local/healthz => 200")
READY=("app-ready => 1" "app-ready => 1" "app-ready => 0")
# named VM: what patroni calls to learn VM's member name (GET /patroni has none in 3.0.2; vm_0's
# configuration names it, the others are found by their api_url in /cluster)
named() {
    echo "curl GET http://$1:8008/patroni => 200"
    [ "$1" = vm_0 ] || echo "curl GET http://$1:8008/cluster => 200"
}
# switchover VM [STATUS]: what patroni's prepare calls on the leader VM (the POST answered STATUS)
switchover() {
    local u="http://$1:8008"
    printf '%s\n' "curl GET $u/leader => 200" "$(named "$1")" "curl POST $u/switchover => ${2:-200}" \
        "curl GET $u/cluster => 200" "curl GET $u/leader => 503" "curl GET $u/health => 200"
}
# caught_up VM LAGGING: what patroni's recover calls on a replica VM: LAGGING looks that find
# it lagging in /cluster, then one that finds it within the lag and asks the leader whether it
# streams (the leader's GET /patroni); leader_in VM PHASE EVENT ATTEMPT: that leader
leader_in() { calls "$@" | sed -n 's|^curl GET http://\(vm_[0-9]\):8008/patroni => 200$|\1|p' | grep -vx "$1" | tail -1; }
caught_up() {
    local u="http://$1:8008"
    named "$1"
    lines "$2" "curl GET $u/leader => 503" "curl GET $u/health => 200" "curl GET $u/cluster => 200"
    printf '%s\n' "curl GET $u/leader => 503" "curl GET $u/health => 200" "curl GET $u/cluster => 200" \
        "curl GET $u/cluster => 200" "curl GET http://$3:8008/patroni => 200"
}
# lb_prepare VM / lb_recover VM: what lb-drain calls (vm_2: the probe port)
lb_prepare() { [ "$1" != vm_2 ] || printf '%s\n' "iptables -C $RULE => 1" "iptables -I $RULE => 0"; }
lb_recover() {
    if [ "$1" = vm_2 ]; then
        printf '%s\n' "iptables -C $RULE => 0" "iptables -D $RULE => 0" "iptables -C $RULE => 1"
    else
        echo "curl GET http://probe.local$TMP/agent_${1#vm_}/probe => 200"
    fi
}

# --- 1. a rollout
rollout_checked 3 60
ok "rollout through the example hooks: one POST per event, approvals after prepares, FDs serialised, all recovered"

e=$(event_of vm_3)
expect vm_3 prepare "$e" 1 "crm node standby vm_3 => 0" "$MON vm_3 standby running=1" "$MON vm_3 standby running=0"
expect vm_3 recover "$e" 1 "$MON down" "$MON down" "$MON vm_3 standby running=0" "crm node online vm_3 => 0" \
    "$MON vm_3 online running=1"
e=$(event_of vm_4)
expect vm_4 prepare "$e" 1 "pcs node standby vm_4 => 0" "$MON vm_4 standby running=1" "$MON vm_4 standby running=0"
expect vm_4 recover "$e" 1 "$MON vm_4 standby running=0" "pcs node unstandby vm_4 => 0" "$MON vm_4 online running=1" \
    "${READY[@]}"
ok "pacemaker: crm (vm_3) and pcs (vm_4) found by themselves; standby, resources gone before the prepare ended; online once Pacemaker answered (vm_3: down twice)"
e=$(event_of vm_5)
K8S_PREPARE=("kubectl cordon vm_5 => 0" "kubectl drain vm_5 --ignore-daemonsets --delete-emptydir-data --timeout=30s => 0")
K8S_RECOVER=("kubectl uncordon vm_5 => 0" "kubectl wait --for=condition=Ready node/vm_5 --timeout=30s => 0")
expect vm_5 prepare "$e" 1 "${K8S_PREPARE[@]}" "${HEALTHZ[@]}"
expect vm_5 recover "$e" 1 "${K8S_RECOVER[@]}" "${HEALTHZ[@]}"
ok "kubernetes: cordon, drain / uncordon, wait Ready; wait-healthy polled the URL until 200 (prepare and recover)"

# Patroni: a VM that led at its prepare switched over and was a lagging replica on recover
leaders=""
for vm in vm_0 vm_1 vm_2; do
    e=$(event_of "$vm")
    u="http://$vm:8008"
    if [ "$(calls "$vm" prepare "$e" 1 | grep -c "/leader => 200")" -gt 0 ]; then
        leaders+="$vm "
        expect "$vm" prepare "$e" 1 "$(lb_prepare "$vm")" "$(switchover "$vm" "$([ $vm = vm_0 ] && echo 503 || echo 200)")"
        l=$(leader_in "$vm" recover "$e" 1)
        [ -n "$l" ] || fail "$vm's recover asked no other member's GET /patroni: $(calls "$vm" recover "$e" 1)"
        expect "$vm" recover "$e" 1 "$(caught_up "$vm" 2 "$l")" "$(lb_recover "$vm")"
    else
        expect "$vm" prepare "$e" 1 "$(lb_prepare "$vm")" "curl GET $u/leader => 503"
        l=$(leader_in "$vm" recover "$e" 1)
        [ -n "$l" ] || fail "$vm's recover asked no other member's GET /patroni: $(calls "$vm" recover "$e" 1)"
        expect "$vm" recover "$e" 1 "$(caught_up "$vm" 0 "$l")" "$(lb_recover "$vm")"
    fi
done
[[ "$leaders" == "vm_0 "* ]] || fail "vm_0 led first but did not switch over (leaders at their prepare: $leaders)"
[ "$(cat "$S/curl-config.vm_0")" = 'user = "admin:pa\"ss0"' ] || fail "the POST's credentials, as curl read them: $(cat "$S/curl-config.vm_0")"
! grep -q "pa.ss" "$S/calls.log" || fail "credentials on curl's command line: $(grep "pa.ss" "$S/calls.log")"
ok "patroni: switched over by ${leaders% } (credentials on curl's stdin; vm_0's POST answered 503), each a replica before its prepare ended, streaming and caught up on recover"

# lb-drain: down at the end of each prepare (vm_0, vm_1: the file moved; vm_2: the rule), back
# after the recover
for vm in vm_0 vm_1 vm_2; do
    st="probe=drained rules=0"
    [ $vm != vm_2 ] || st="probe=absent rules=1"
    grep -qx "$vm $(event_of $vm) 1 $st" "$TMP/probes.log" || fail "$vm's probe at the end of its prepare: $(grep "^$vm " "$TMP/probes.log")"
    t0=$(hook_at start prepare $vm "$(event_of $vm)" 1)
    in_order "$(python3 -c "print($t0 + 0.4)")" "$(hook_at end prepare $vm "$(event_of $vm)" 1)" ||
        fail "$vm's prepare took less than probe interval x threshold (0.4 s)"
done
if [ ! -e "$TMP/agent_0/probe" ] || [ ! -e "$TMP/agent_1/probe" ] || [ -s "$S/iptables.vm_2" ] ||
    [ -n "$(ls "$TMP"/agent_*/*.schedcoord-drained 2>/dev/null)" ]; then
    fail "probes not all back: $(ls "$TMP"/agent_[01]) $(cat "$S/iptables.vm_2")"
fi
ok "lb-drain: probe file moved away (vm_0, vm_1) or port rejected (vm_2) for interval x threshold, back after"

for vm in vm_0 vm_1 vm_2 vm_4 vm_5; do
    for phase in prepare recover; do
        [ "$(got_event $vm $phase "$(event_of $vm)" 1)" = "00-event 99-event " ] ||
            fail "$vm's $phase chain: the event JSON did not reach every hook: $(grep "^$vm $phase " "$TMP/events.log")"
    done
done
[ ! -e "$TMP/skipped-ran" ] || fail "chain ran a name run-parts skips: $(cat "$TMP/skipped-ran")"
ok "chain: every hook in order with the agent's event JSON on stdin; 50-skip.sh skipped"

# --- 2. one failure per hook, each in an event of its own, armed in the stubs (one-shot)
L=$(<"$S/patroni.leader")
touch "$S/fail.vm_5.drain" "$S/stuck.vm_3" "$S/fail.$L.switchover" "$S/refuse.vm_4.online"
# 30000 s of notice (300 s at x100): the four go one after the other, through a stuck prepare,
# a refused drain and their retries; none may reach its NotBefore, even on a busy machine
one_event() { new_event "{\"EventType\":\"Reboot\",\"Resources\":[\"$1\"],\"NoticeSeconds\":30000,\"DurationInSeconds\":30}"; }
K=$(one_event vm_5)
P=$(one_event vm_3)
D=$(one_event "$L")
R=$(one_event vm_4)
wait_for 180 ev_over "$K" "$P" "$D" "$R" || fail "events not over: $(ctl events)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"
wait_for 10 hist_has ".kind == \"alert\" and .data.alert == \"recover_failed\" and .data.event_id == \"$R\" and .data.member == \"vm_4\"" ||
    fail "no recover_failed alert for vm_4: $(hist ".data.event_id == \"$R\"")"
check 3 --events 7 --all-approved
for e in "$K" "$P" "$D" "$R"; do
    [ "$(started_how "$e")" = approved ] || fail "$e started $(started_how "$e"), not by our approval"
done
ok "4 more events, each approved once by us; check.py holds for all 7"

expect vm_5 prepare "$K" 1 "kubectl cordon vm_5 => 0" \
    "kubectl drain vm_5 --ignore-daemonsets --delete-emptydir-data --timeout=30s => 1"
[ "$(got_event vm_5 prepare "$K" 1)" = "00-event " ] || fail "vm_5's chain went on after kubernetes failed"
expect vm_5 recover "$K" 1 "${K8S_RECOVER[@]}" "${HEALTHZ[@]}"
expect vm_5 prepare "$K" 2 "${K8S_PREPARE[@]}" "${HEALTHZ[@]}"
expect vm_5 recover "$K" 2 "${K8S_RECOVER[@]}" "${HEALTHZ[@]}"
ok "kubernetes: drain failed -> the chain stopped, rolled back (uncordon), attempt 2 drained"

polls=$(calls vm_3 prepare "$P" 1 | grep -c "^$MON vm_3 standby running=1$")
expect vm_3 prepare "$P" 1 "crm node standby vm_3 => 0" "$(lines "$polls" "$MON vm_3 standby running=1")"
# it looked again and again, and gave up by its timeout (not by a count of looks: on a busy
# machine a look can take longer than its 0.1 s interval)
[ "$polls" -ge 2 ] || fail "vm_3's prepare gave up after $polls look(s)"
grep -q 'vm=vm_3 phase=prepare state=failed .*resources still on vm_3: not after 2 s' "$TMP/coord.err" ||
    fail "vm_3's prepare did not give up by its 2 s timeout: $(grep 'vm=vm_3 phase=prepare state=failed' "$TMP/coord.err")"
expect vm_3 recover "$P" 1 "$MON vm_3 standby running=1" "crm node online vm_3 => 0" "$MON vm_3 online running=1"
expect vm_3 prepare "$P" 2 "crm node standby vm_3 => 0" "$MON vm_3 standby running=1" "$MON vm_3 standby running=0"
ok "pacemaker: resources stuck -> timeout ($polls looks), rolled back (online), attempt 2 moved them"

u="http://$L:8008"
expect "$L" prepare "$D" 1 "$(lb_prepare "$L")" "curl GET $u/leader => 200" "$(named "$L")" \
    "curl POST $u/switchover => 412"
[ "$(got_event "$L" prepare "$D" 1)" = "00-event " ] || fail "$L's chain went on after patroni failed"
expect "$L" recover "$D" 1 "$(named "$L")" "curl GET $u/leader => 200" "$(lb_recover "$L")"
expect "$L" prepare "$D" 2 "$(lb_prepare "$L")" "$(switchover "$L")"
grep -qx "$L $D 1 probe=$([ "$L" = vm_2 ] && echo "absent rules=1" || echo "drained rules=0")" "$TMP/probes.log" ||
    fail "$L's probe not down after its failed prepare: $(grep "^$L " "$TMP/probes.log")"
ok "patroni: switchover refused (412) on $L -> rolled back (still leading: healthy; probe back), attempt 2 switched over"

tries=$(calls vm_4 recover "$R" 1 | grep -c "^pcs node unstandby vm_4 => 1$")
[ "$tries" -ge 2 ] || fail "vm_4's recover gave up after $tries tries"
expect vm_4 recover "$R" 1 "$(lines "$tries" "$MON vm_4 standby running=0" "pcs node unstandby vm_4 => 1" \
    "$MON vm_4 standby running=0")" "${READY[@]}"
[ "$(got_event vm_4 recover "$R" 1)" = "00-event 99-event " ] || fail "vm_4's recover chain stopped at the failure"
grep -q "^end recover vm_4 $R " "$HOOKLOG" || fail "no recover end for vm_4"
ok "chain: a failed recover hook (pcs unstandby refused, tried $tries times in 2 s) -> the rest still ran, the chain failed: alert recover_failed"
coord_stop
