#!/usr/bin/env bash
# End to end with CURVE on (no --insecure anywhere): keys from `schedcoordctl keygen`, one
# keyring of the printed lines; the 6-VM Reboot rollout completes with the usual safety
# properties. A seventh member, vm_6, runs an agent whose key is not in the coordinator's
# keyring: ZAP refuses it, so nothing of it ever reaches the coordinator (no hello: no fault
# domain, never alive in status).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100 --rate-limit 0
keys_make 6
"$SC_BIN/schedcoordctl" keygen --name vm_6 --out "$KEYDIR" >"$KEYDIR/vm_6.line" || fail "keygen vm_6"
cat "$KEYDIR/keyring" "$KEYDIR/vm_6.line" >"$KEYDIR/keyring-vm_6" # what the stranger believes
[ "$(wc -l <"$KEYDIR/keyring")" -eq 6 ] || fail "keyring: $(cat "$KEYDIR/keyring")"
set_start 6
read -r p6 <<<"$(free_ports 1 "$SC_LO")"
MEMBERS+=",vm_6=$SC_LO:$p6"
mkdir -p "$TMP/agent_6"
write_hook 6 0.3
"$SC_BIN/schedcoord-agent" --name vm_6 --imds-url "$B/vm_5" --members "$MEMBERS" \
    --state-dir "$TMP/agent_6" --prepare-hook "$TMP/agent_6/hook" --recover-hook "$TMP/agent_6/hook" \
    --key "$KEYDIR/vm_6.key" --keys "$KEYDIR/keyring-vm_6" --poll-interval 0.5 --log-level warn \
    >"$TMP/agent_6.out" 2>"$TMP/agent_6.err" &
AGENT_PIDS+=($!)
STRANGER=$!
coord_start
wait_for 20 all_members_seen 6 || fail "members not all seen: $(ctl status --json | jq -c .members)"
! grep -q INSECURE "$TMP/coord.err" || fail "the coordinator runs without CURVE"
ok "6 agents with CURVE keys seen by the coordinator"

rollout_checked 3 60
ok "rollout over CURVE: one POST per event, approvals after prepares, FDs serialised, all recovered"

kill -0 "$STRANGER" || fail "vm_6's agent died: $(tail -3 "$TMP/agent_6.err")"
pub6=$(cut -d' ' -f2 "$KEYDIR/vm_6.line")
grep 'connection refused by ZAP' "$TMP/coord.err" | grep -F "key=$pub6" >/dev/null ||
    fail "the coordinator did not refuse vm_6's key"
grep -q 'refused the handshake' "$TMP/agent_6.err" || fail "vm_6's agent was not told it is refused"
v6=$(ctl status --json | jq -c '.members[] | select(.name == "vm_6") | {alive, fault_domain}')
[ "$v6" = '{"alive":false,"fault_domain":-1}' ] || fail "vm_6 reached the coordinator: $v6"
! hist_has '.kind == "member" and .data.name == "vm_6" and .data.fault_domain != null' ||
    fail "a hello of vm_6 is in the decision log"
ok "unknown key: vm_6's reports never reached the coordinator (no hello, no fault domain)"
coord_stop
