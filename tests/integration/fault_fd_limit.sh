#!/usr/bin/env bash
# A big set under the usual soft open-file limit: 600 members, soft RLIMIT_NOFILE 512 (systemd
# gives services 1024). The coordinator keeps one connection per member: it must raise its soft
# limit toward the hard one at start instead of dying with "Too many open files"; the agent
# keeps a socket and a monitor per voter only (issue 11: 3 of the 600, ~4 descriptors each),
# so it needs no more than it has (before, one per member: it died at ~340 members under
# 1024). The list of 600 must be accepted by both.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge 4096 ] || fail "hard open-file limit $hard < 4096: cannot test raising the soft one"
ulimit -Sn 512

sim_start --vms 2 --fault-domains 2
read -r -a ports <<<"$(free_ports 2 "$SC_LO")"
MEMBERS="vm_0=$SC_LO:${ports[0]},vm_1=$SC_LO:${ports[1]}"
for ((i = 2; i < 600; i++)); do MEMBERS+=",vm_$i=127.0.0.1:9"; done # never started
coord_start --log-level warn
mkdir -p "$TMP/agent_1"
write_hook 1 0.1
"$SC_BIN/schedcoord-agent" --name vm_1 --imds-url "$B/vm_1" --members "$MEMBERS" \
    --state-dir "$TMP/agent_1" --prepare-hook "$TMP/agent_1/hook" --recover-hook "$TMP/agent_1/hook" \
    --insecure --standalone-after 600 --log-level warn 2>"$TMP/agent_1.err" &
AGENT_PIDS+=($!)
AP=$!

seen() { [ "$(ctl status --json | jq '[.members[] | select(.name == "vm_1" and .alive and .fault_domain >= 0)] | length')" -eq 1 ]; }
wait_for 30 seen || fail "the coordinator never heard vm_1: $(tail -3 "$TMP/agent_1.err")"
kill -0 "$AP" || fail "the agent died: $(tail -3 "$TMP/agent_1.err")"
soft() { awk '/^Max open files/ {print $4}' "/proc/$1/limits"; }
a=$(soft "$AP")
c=$(soft "$COORD_PID")
[ "$a" -ge $((4 * 3 + 64)) ] || fail "agent's soft open-file limit is $a, below 4 per voter"
n=$(find "/proc/$AP/fd" -mindepth 1 | wc -l)
[ "$n" -lt 100 ] || fail "the agent holds $n descriptors with 600 members listed (voters only: expected a few dozen)"
[ "$c" -ge $((600 + 128)) ] || fail "coordinator's soft open-file limit is $c, below 1 per member"
! grep -qi 'too many open files' "$TMP/agent_1.err" "$TMP/coord.err" || fail "EMFILE: $(grep -hi 'too many' "$TMP"/*.err | head -3)"
ok "600 members under a soft limit of 512: the agent holds $n descriptors, the coordinator raised its limit to $c; vm_1 heard"
sleep 2
kill -0 "$AP" || fail "the agent died later: $(tail -3 "$TMP/agent_1.err")"
seen || fail "vm_1 no longer alive"
coord_stop
ok "both still running 2 s later; clean stop"
