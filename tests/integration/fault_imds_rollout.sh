#!/usr/bin/env bash
# Bad IMDS answers during a real rollout (imds-sim x100 + 6 agents + coordinator vm_0): while
# each fault domain's event is drained, its VMs' IMDS answers 500, 429, 410, times out,
# answers garbage, an empty body, or resets the connection (POST /control/faults); vm_0's
# IMDS, through which the coordinator POSTs its approvals, answers 500 and then resets just
# before approvals are due. Proves: every daemon still runs; each agent's log names the
# problem it met; the coordinator's failed approval POSTs were retried with backoff and each
# event got exactly one successful POST after its prepares (check.py), fault domains never
# overlapped, every prepared VM recovered, every event approved by us.
#
# The setup makes vm_0 POST every approval itself, through its own IMDS, as the faults need:
# the coordinator POSTs itself when its own member sees the event and is not blind, and hands
# the approval to another member otherwise (approve_via, docs/planner.md), correctly too.
#  - Never blind: vm_0's faults also meet its agent's polls, and each failed poll doubles the
#    agent's backoff (up to 30 s), so its heartbeat's imds_down_ms could pass the default
#    --imds-stale of 15 s. --imds-stale 3600 is longer than the whole test.
#  - Sees each event before its approval: FD 0's prepare hooks wait until vm_0's agent fetched
#    a document holding the event (gate fetched vm_0); vm_0's agent sends it to the coordinator
#    before the end of its own prepare. Each next fault domain's event appears in the same
#    simulator tick as the previous one completes, and the previous one ends for the
#    coordinator only once vm_0 (alive, never blind) reported a document without it, which
#    holds the next one: seen before its drain can start. (The gate is in every prepare hook.)
#  - The approvals are ours, never Azure's: 30000 simulated s of notice (300 s) is more than
#    the test lasts, so no NotBefore passes while faulted agents back off.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100 --fault-timeout 7
set_start 6
coord_start --imds-stale 3600
wait_for 20 all_members_seen 6 || fail "members not all seen"

fault() { # VM ANSWER COUNT
    local a=$2
    [[ "$a" =~ ^[0-9]+$ ]] || a="\"$a\""
    curl -sS -f -d "{\"vm\":\"$1\",\"answer\":$a,\"count\":$3}" "$B/control/faults" >/dev/null ||
        fail "fault $1 $2 not accepted"
}
created() { grep -c '"kind": *"created"' "$TL" || true; }

# Faults on vm_0 hit its agent's polls too (one IMDS per VM, polled every 0.5 s), so they must
# be injected just before the approval POST: by the prepare hooks of each fault domain's two
# VMs, as their last act, once vm_0 has the event (above) (the POST follows the last prepare's
# report within milliseconds; vm_0's agent, backing off 1 s then 2 s after a failed poll, would
# need over 3 s to use the 3 faults up first). FD 0: 500; FD 1: reset; FD 2: 429.
vm0_fault_hook() { # I ANSWER: vm_I's hook, which sets vm_0's fault at the end of a prepare
    write_hook "$1" 0.3 none "{ $(gate fetched vm_0); curl -sS -f -d '{\"vm\":\"vm_0\",\"answer\":$2,\"count\":3}' $B/control/faults >/dev/null; }"
}
for i in 0 3; do vm0_fault_hook $i 500; done
for i in 1 4; do vm0_fault_hook $i '"reset"'; done
for i in 2 5; do vm0_fault_hook $i 429; done
ordered() { [ "$(grep -c 'prepare ordered' "$TMP/coord.err")" -ge "$1" ]; }

# FD 0 (vm_0, vm_3) drains first; every VM gets a fault at once (they all see the event and
# report documents): vm_3 410, vm_1 429, vm_4 a timeout (7 s held, the agent gives up at 5 s),
# vm_2 garbage, vm_5 an empty body.
fault vm_3 410 4
fault vm_1 429 4
fault vm_4 timeout 1
fault vm_2 garbage 4
fault vm_5 empty 4
# vm_0's own agent meets a reset and a 500 before the rollout (its approvals meet theirs later,
# set by the hooks; the agent's polls may or may not meet those)
fault vm_0 reset 2
wait_for 15 grep -Eq 'reset|Empty reply|closed|SC_E_NET' "$TMP/agent_0.err" || fail "vm_0's agent never met the reset"
fault vm_0 500 2
wait_for 15 grep -Eq 'HTTP 5|http=500' "$TMP/agent_0.err" || fail "vm_0's agent never met the 500"
# vm_4's agent sends no heartbeat while its poll hangs (5 s, the IMDS client's timeout): the
# coordinator may count it dead meanwhile (--dead-after 5), and a dead member is skipped, not
# drained. The rollout starts once it gave up and every member is alive again.
wait_for 15 grep -Eq 'timed out|TIMEOUT' "$TMP/agent_4.err" || fail "vm_4's agent never met the timeout"
wait_for 20 all_members_seen 6 || fail "members not all alive again: $(ctl status)"
# 30000 simulated s of notice = 300 s (each fault domain's event is created when the previous
# one completes; its drain waits for the previous fault domain's recover, which waits for the
# end of the event in every faulted VM's document, after its agent's backoff); 30 s of
# impact = 0.3 s
curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":30000,"DurationInSeconds":30}' \
    "$B/control/maintenance" >/dev/null || fail "maintenance not accepted"
# FD 1 (vm_1, vm_4): resets and 500s; vm_0 resets when its approval is due (hooks)
wait_for 30 ordered 3 || fail "second drain never ordered: $(ctl status)"
fault vm_1 reset 3
fault vm_4 500 3
# FD 2 (vm_2, vm_5): garbage and empty bodies while drained; vm_0 429 (hooks)
wait_for 30 ordered 5 || fail "third drain never ordered: $(ctl status)"
fault vm_2 empty 3
fault vm_5 garbage 3

wait_for 60 completed_ge 3 || fail "rollout not complete: $(ctl status)"
wait_for 20 hooks_settled || fail "hooks did not settle: $(cat "$HOOKLOG")"

# 1. every daemon still running
for p in "${AGENT_PIDS[@]}" "$COORD_PID"; do kill -0 "$p" || fail "pid $p died"; done
ok "6 agents and the coordinator still running"

# 2. each log names the problem it met
need() { # FILE REGEX WHAT
    grep -Eq "$2" "$1" || fail "$(basename "$1"): no log line naming $3: $(grep -i 'imds\|approv' "$1" | tail -5)"
}
need "$TMP/agent_0.err" 'HTTP 5|http=500' "the 500"
need "$TMP/agent_0.err" 'reset|Empty reply|closed|SC_E_NET' "the reset"
need "$TMP/agent_3.err" 'HTTP 410|http=410' "the 410"
need "$TMP/agent_1.err" 'HTTP 429|http=429' "the 429"
need "$TMP/agent_4.err" 'timed out|TIMEOUT' "the timeout"
need "$TMP/agent_2.err" 'not JSON|NOT_JSON|cut short|TRUNCATED|refused' "the garbage"
need "$TMP/agent_5.err" 'empty body|EMPTY' "the empty body"
grep -q 'AddressSanitizer\|runtime error' "$TMP"/*.err && fail "sanitizer report"
ok "agents' logs name each fault (HTTP 500/410/429, timeout, not JSON, empty body, reset)"

# 2b. one retry time per line: the agent's backoff (retry_ms=), never a second one from the
# IMDS client's message (it once said "retry_ms=4366 ... why=\"... retry in 1000 ms\"")
polls=$(cat "$TMP"/agent_*.err | grep 'IMDS poll failed' || true)
[ -n "$polls" ] || fail "no agent logged a failed IMDS poll"
echo "$polls" | grep -v 'retry_ms=[0-9]' | grep . && fail "poll failure without retry_ms= (above)"
grep -h 'retry in' "$TMP"/agent_*.err "$TMP/coord.err" && fail "a log line carries a second retry time (above)"
grep -q 'approval failed, will retry.*retry_ms=[0-9]' "$TMP/coord.err" ||
    fail "coordinator's failed approval does not say when it retries: $(grep 'approval failed' "$TMP/coord.err" | tail -3)"
ok "one retry time per log line ($(echo "$polls" | wc -l) failed polls, each with retry_ms=)"

# 3. the coordinator's approvals met failures, were retried, and succeeded once per event
failed_posts=$(jq -s '[.[] | select(.kind == "post" and .vm == "vm_0" and .status != 200)] | length' "$TL")
[ "$failed_posts" -ge 1 ] || fail "no approval POST of vm_0 met a fault: the test did not test the retry: $(jq -c 'select(.kind == "post")' "$TL")"
# each fault domain's approval met its own fault (500, reset, 429: a faulted POST's fact does
# not name its events, its fault does)
met=$(jq -rs '[.[] | select(.kind == "post" and .vm == "vm_0" and .status != 200)
    | if .fault == "reset" then "reset" else (.status | tostring) end] | unique | join(" ")' "$TL")
[ "$met" = "429 500 reset" ] || fail "the approvals met these faults: '$met', not 429 500 reset: $(jq -c 'select(.kind == "post")' "$TL")"
grep -Eq 'approv.*(HTTP 5|http=500|http=0|http=429|SC_E_)' "$TMP/coord.err" ||
    fail "coordinator log does not name the failed approval: $(grep -i approv "$TMP/coord.err" | tail -5)"
check 3 --events 3 --all-approved
ok "approvals: $failed_posts failed POSTs retried, exactly one successful POST per event, FDs serialised, all recovered (check.py)"

# 4. nothing forgotten: the coordinator's view agrees, every drain recovered
ctl status --json >"$TMP/status.json"
jq -e '[.events[] | .drains // {} | to_entries[] | select(.value != "recovered" and .value != "none")] | length == 0' \
    "$TMP/status.json" >/dev/null || fail "drains not all recovered: $(jq -c '[.events[] | .drains]' "$TMP/status.json")"
coord_stop
ok "every prepared VM recovered in the coordinator's store; clean stop"
n=$(sc_check_logfmt "$TMP"/*.err)
ok "every log line one logfmt record, hostile text escaped ($n)"
