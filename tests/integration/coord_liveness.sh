#!/usr/bin/env bash
# Agents' liveness at the daemons' default settings (issue 11 re-chose them: the voters'
# heartbeats decide the election, an agent's only says its VM still runs). Agents heartbeat
# every 5 s (--heartbeat-interval; agent_liveness checks that) and a member is dead after 15 s
# of silence (--dead-after): an agent killed with kill -9 is declared dead by its silence, after
# 15 s of it, and meanwhile — from the start, longer than --dead-after — no other member is
# ever taken for dead between two heartbeats (it would be if the two defaults drifted apart).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"
FAST_LIVENESS=0 # this test is about the defaults: no faster flags

sim_start --vms 3 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 3
coord_start
wait_for 20 all_members_seen 3 || fail "members not all seen: $(ctl status --json | jq -c .members)"
ok "3 members alive, agents and coordinator at their default liveness settings"

kill -9 "${AGENT_PIDS[2]}"
killed=$(date +%s.%N)
dead() { grep 'msg="member silent: dead" member=vm_2 ' "$TMP/coord.err"; }
wait_for 30 dead || fail "vm_2's agent killed, never declared dead: $(ctl status --json | jq -c .members)"
silent=$(dead | sed -n 's/.* silent_ms=\([0-9]*\).*/\1/p' | head -1)
[ -n "$silent" ] && [ "$silent" -ge 15000 ] || fail "declared dead after $silent ms of silence: $(dead)"
ok "vm_2's agent killed: dead after ${silent} ms of silence ($(awk -v k="$killed" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - k }') s after the kill)"
! grep 'msg="member silent: dead"' "$TMP/coord.err" | grep -v ' member=vm_2 ' ||
    fail "a member taken for dead between its heartbeats"
[ "$(ctl status --json | jq -c '[.members[] | select(.name != "vm_2") | .alive]')" = "[true,true]" ] ||
    fail "vm_0 and vm_1 not alive: $(ctl status --json | jq -c .members)"
ok "all along (over ${silent} ms of vm_2's silence and before), vm_0 and vm_1 alive, never taken for dead"
coord_stop
