#!/usr/bin/env bash
# The lb-drain hook (deploy/hooks/lb-drain) with a real iptables (Debian 12's iptables 1.8.9,
# the nf_tables backend Debian installs as `iptables`) in a VM's network namespace (issue 22),
# driven by a real agent's order: a VM namespace running a web service on its probe port 8080,
# imds-sim, its coordinator and agent (on the VM's own loopback, --insecure: one machine),
# and a peer namespace, its clients, joined to it by a veth, holding two source addresses:
# 168.63.129.16 (where Azure's load balancer probes come from; only ever inside these
# namespaces) and an ordinary client's. The agent's prepare and recover hook is the example,
# with an operator's settings file (the probe port, a probe URL for recover, probe interval
# 0.2 s x 2). One Reboot event on the VM:
#  1. while drained (its prepare done, held by a gate before its end): a probe from
#     168.63.129.16 is refused (a TCP reset: curl "connection refused"), a client from the
#     other address gets its answer, and the rule is in the VM's firewall only (not the
#     host's);
#  2. after the event (approved once, coord/check.py) the recover took the rule out (every
#     copy) and the probe from 168.63.129.16 is answered again.
# SC_LB_HOOK=CMD runs CMD instead of the hook (e.g. true: the test must then fail).
# Needs root and network namespaces (skipped otherwise), and iptables (deploy/install-deps.sh
# --test).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"
. "$SC_SRC/tests/integration/coord/netns.sh"

command -v iptables >/dev/null || fail "iptables not installed: run deploy/install-deps.sh --test"
HOOK=${SC_LB_HOOK:-$SC_SRC/deploy/hooks/lb-drain}
PROBE=168.63.129.16
VM_IP="10.214.$NS_X.10"
CLIENT_IP="10.214.$NS_X.20"
V="sc$$v0"
P="sc$$p0"
SVC_PID=""
eval "ns_on_exit() $(declare -f sc_on_exit | tail -n +2)"
sc_on_exit() {
    sc_kill "$SVC_PID"
    ns_on_exit
}

# the VM and its clients; NS (netns.sh) deletes both on exit
NS=("$V" "$P")
ip netns add "$V" || { echo "SKIP: cannot create a network namespace"; exit 77; }
ip netns add "$P"
ip link add "sce$$" type veth peer name "scf$$"
ip link set "sce$$" netns "$V"
ip link set "scf$$" netns "$P"
ip -n "$V" link set "sce$$" name eth0
ip -n "$P" link set "scf$$" name eth0
ip -n "$V" addr add "$VM_IP/24" dev eth0
ip -n "$P" addr add "$CLIENT_IP/24" dev eth0
ip -n "$P" addr add "$PROBE/32" dev eth0
for n in "$V" "$P"; do
    ip -n "$n" link set eth0 up
    ip -n "$n" link set lo up
done
ip -n "$V" route add "$PROBE/32" dev eth0
# inv CMD...: CMD in the VM (a function: never for a daemon whose $! is wanted)
inv() { ip netns exec "$V" "$@"; }

# the service: answers GET / on the probe port
mkdir -p "$TMP/www"
echo up >"$TMP/www/index.html"
ip netns exec "$V" python3 -m http.server 8080 --bind "$VM_IP" --directory "$TMP/www" >/dev/null 2>"$TMP/svc.err" &
SVC_PID=$!
# get FROM: a GET of the service from the peer namespace, from address FROM -> curl's exit
# status (0: answered; 7: refused)
get() {
    local rc=0
    ip netns exec "$P" curl -sS -f -o /dev/null --max-time 5 --interface "$1" "http://$VM_IP:8080/" 2>"$TMP/get.err" || rc=$?
    return "$rc"
}
wait_for 10 get "$CLIENT_IP" || fail "the service does not answer: $(cat "$TMP/svc.err")"
get "$PROBE" || fail "the probe is not answered before any drain: $(tail -1 "$TMP/get.err")"
ok "a VM serving port 8080 ($VM_IP); its peer probes from $PROBE and calls from $CLIENT_IP"

# imds-sim, the coordinator and the agent in the VM, on its loopback
ip netns exec "$V" "$SC_BIN/imds-sim" --listen 127.0.0.1:0 --timeline "$TL" --vms 1 --fault-domains 1 --time-scale 100 \
    --complete-after 100 >"$TMP/sim.out" 2>>"$TMP/sim.err" &
SIM_PID=$!
PIDS+=("$SIM_PID")
wait_for 10 grep -q '^listening on ' "$TMP/sim.out" || fail "imds-sim did not start: $(tail -3 "$TMP/sim.err")"
B="http://127.0.0.1:$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/sim.out")"
MEMBERS="vm_0=127.0.0.1:7700/0"
mkdir -p "$TMP/agent_0"
{
    echo "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
    echo "SCHEDCOORD_LB_PROBE_PORT=8080"
    echo "SCHEDCOORD_LB_PROBE_URL=http://$VM_IP:8080/"
    echo "SCHEDCOORD_LB_PROBE_INTERVAL=0.2"
    echo "SCHEDCOORD_LB_RECOVER_TIMEOUT=10"
} >"$TMP/hooks.env"
write_hook 0 0 none "{ : >$TMP/at-gate; $(gate release probed); }" "env SCHEDCOORD_HOOKS_ENV=$TMP/hooks.env $HOOK"
# shellcheck disable=SC2046 # fast_coord, fast_agent: flags or nothing
ip netns exec "$V" "$SC_BIN/schedcoord-coordinator" --name vm_0 --imds-url "$B/vm_0" --members "$MEMBERS" \
    --state-dir "$TMP/coord" --insecure --deadline-margin-s 1 $(fast_coord) >>"$TMP/coord.out" 2>>"$TMP/coord.err" &
COORD_PID=$!
# shellcheck disable=SC2046
ip netns exec "$V" "$SC_BIN/schedcoord-agent" --name vm_0 --imds-url "$B/vm_0" --members "$MEMBERS" \
    --state-dir "$TMP/agent_0" --prepare-hook "$TMP/agent_0/hook" --recover-hook "$TMP/agent_0/hook" \
    --insecure --poll-interval 0.5 $(fast_agent) --standalone-after 600 --hook-timeout 30 --log-level warn \
    >>"$TMP/agent_0.out" 2>>"$TMP/agent_0.err" &
AGENT_PIDS[0]=$!
wait_for 20 all_members_seen 1 || fail "the agent did not reach its coordinator: $(ctl status --json | jq -c .members)"

# 1. drained: the prepare's rule in place (the hook waited probe interval x threshold)
E=$(inv curl -sS -f -d '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/events" | jq -r .EventId)
[ -n "$E" ] || fail "event not created"
# the gate is the prepare's last step: the hook itself has ended (its wait included)
wait_for 30 test -e "$TMP/at-gate" || fail "the prepare did not reach its end: $(cat "$HOOKLOG"; tail -3 "$TMP/agent_0.err")"
rc=0
get "$PROBE" || rc=$?
[ "$rc" -eq 7 ] || fail "a probe from $PROBE while drained: curl exit $rc (want 7, refused): $(tail -1 "$TMP/get.err")"
get "$CLIENT_IP" || fail "a client from $CLIENT_IP while drained: $(tail -1 "$TMP/get.err")"
inv iptables -C INPUT -s "$PROBE" -p tcp --dport 8080 -j REJECT --reject-with tcp-reset ||
    fail "no rule in the VM: $(inv iptables -S INPUT)"
! iptables -S INPUT 2>/dev/null | grep -qF "$PROBE" || fail "the rule reached the host's firewall"
release probed
ok "drained: probes from $PROBE refused (TCP reset), $CLIENT_IP served; the rule in the VM's firewall only"

# 2. the event goes through; the recover takes the rule out and the probe is answered
wait_for 60 ev_over "$E" || fail "event not over: $(ctl events)"
wait_for 30 hooks_settled || fail "the VM not recovered: $(cat "$HOOKLOG")"
inv curl -sS "$B/control/state" >"$TMP/state.json"
python3 "$SC_SRC/tests/integration/coord/check.py" --timeline "$TL" --hooks "$HOOKLOG" \
    --state "$TMP/state.json" --fault-domains 1 --events 1 --all-approved || fail "safety check failed"
! hist_has '.kind == "alert"' || fail "alerts: $(hist '.kind == "alert"')"
! inv iptables -S INPUT | grep -qF "$PROBE" || fail "rule left after the recover: $(inv iptables -S INPUT)"
get "$PROBE" || fail "a probe from $PROBE after the recover: $(tail -1 "$TMP/get.err")"
get "$CLIENT_IP" || fail "a client after the recover: $(tail -1 "$TMP/get.err")"
ok "recovered: the rule gone, probes from $PROBE answered again ($(iptables -V))"
coord_stop
