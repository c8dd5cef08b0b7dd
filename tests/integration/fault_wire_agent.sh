#!/usr/bin/env bash
# Bad wire messages to an agent, from a fake coordinator (tests/integration/fault/wire.py,
# a ROUTER on the agent's member endpoint, --insecure): garbage, truncated, empty, wrong
# version, unknown type, unknown field, multi-frame, negative term, a bad order action, a
# message type not for agents, a sender that is not the endpoint's member, an order of an old
# term, an order from a member that is not the leader of the term, an approve_via of an old
# term. The agent keeps running, logs each with a reason, runs no hook and posts nothing for
# any of them, nacks the orders it refuses, counts them (its stop line), and afterwards obeys
# a valid order of a newer term.
source "${SC_SRC:-.}/tests/peer/agent_testlib.sh"
PY=python3
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import zmq' 2>/dev/null; then PY=$p; break; fi
done
"$PY" -c 'import zmq' || fail "python3-zmq is missing (deploy/install-deps.sh --test)"

sim_start --vms 2 --fault-domains 2
CP=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
: >"$TMP/cmds"
"$PY" "$SC_SRC/tests/integration/fault/wire.py" agent "$CP" vm_9 "$TMP/fake.jsonl" "$TMP/cmds" \
    2>"$TMP/fake.err" &
PIDS+=($!)
sc_wait_until 5 grep -qs ready "$TMP/fake.jsonl" || fail "fake coordinator not ready: $(tail -3 "$TMP/fake.err")"
make_hook
agent_start vm_0 --members "vm_9=127.0.0.1:$CP" --insecure --standalone-after 600 --log-level info
got() { jq -c "select(.msg and ($1))" "$TMP/fake.jsonl" 2>/dev/null | wc -l; }
got_one() { [ "$(got "$1")" -ge 1 ]; }
until_got() { sc_wait_until "$1" got_one "$2" || fail "timed out waiting for $2"; } # SECONDS FILTER
until_got 10 '.msg.type == "hello"'
alive() { kill -0 "$AGENT_PID" || fail "agent died: $(tail -20 "$TMP/agent.err")"; }
EV=$(sim_event '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":900}')
until_got 5 ".msg.type == \"document\" and .msg.incarnation == 2"

# a leader of term 5 (the fake is vm_9, but says vm_8 leads: vm_9 is not the leader)
cmd "send {\"v\":1,\"type\":\"leader\",\"from\":\"vm_9\",\"term\":5,\"leader\":\"vm_8\",\"lease_ms\":3000}"
sleep 0.3
cmd bad
cmd "send {\"v\":1,\"type\":\"leader\",\"from\":\"vm_7\",\"term\":9,\"leader\":\"vm_7\",\"lease_ms\":3000}"
cmd "send {\"v\":1,\"type\":\"order\",\"from\":\"vm_9\",\"term\":4,\"action\":\"prepare\",\"event\":\"$EV\"}"
cmd "send {\"v\":1,\"type\":\"order\",\"from\":\"vm_9\",\"term\":5,\"action\":\"prepare\",\"event\":\"$EV\"}"
cmd "send {\"v\":1,\"type\":\"approve_via\",\"from\":\"vm_9\",\"term\":3,\"events\":[\"$EV\"]}"
until_got 5 '.msg.type == "nack" and (.msg.reason | test("not the leader of term 5 \\(vm_8 is\\)"))'
until_got 5 '.msg.type == "nack" and (.msg.reason | test("stale term 4 < 5"))'
until_got 5 '.msg.type == "nack" and (.msg.reason | test("stale term 3 < 5"))'
sleep 1
alive
[ ! -s "$TMP/hooks.log" ] || fail "a hook ran: $(cat "$TMP/hooks.log")"
curl -sS "$B/control/state" >"$TMP/state.json"
jq -e "[.events[] | select(.EventId == \"$EV\")] | length == 1" "$TMP/state.json" >/dev/null ||
    fail "event not in the simulator's state"
jq -e '[.events[].approvals[]] | length == 0' "$TMP/state.json" >/dev/null ||
    fail "something was approved: $(jq -c '[.events[].approvals]' "$TMP/state.json")"
[ "$(got '.msg.type == "hook_progress"')" -eq 0 ] || fail "hook progress for a refused order"
ok "no hook run, nothing approved, refused orders nacked (stale term, not the leader)"

E="$TMP/agent.err"
for pat in 'class=not_json' 'class=version' 'class=type' 'class=unknown' 'class=frames' \
    'class=envelope' 'class=field' 'heartbeat is not for agents' 'class=sender why="from is vm_7"' \
    'order refused.*stale term 4 < 5' 'order refused.*not the leader of term 5' \
    'order refused.*stale term 3 < 5'; do
    grep -Eq "$pat" "$E" || fail "no log line matching /$pat/: $(grep refused "$E" | tail -20)"
done
ok "each refusal logged with its class and reason"

# still obeys: a newer term from its member, leader vm_9
cmd "send {\"v\":1,\"type\":\"leader\",\"from\":\"vm_9\",\"term\":6,\"leader\":\"vm_9\",\"lease_ms\":3000}"
cmd "send {\"v\":1,\"type\":\"order\",\"from\":\"vm_9\",\"term\":6,\"action\":\"prepare\",\"event\":\"$EV\"}"
until_got 10 ".msg.type == \"hook_progress\" and .msg.state == \"done\" and .msg.event == \"$EV\""
[ "$(grep -c "^prepare $EV" "$TMP/hooks.log")" -eq 1 ] || fail "hooks: $(cat "$TMP/hooks.log")"
ok "afterwards a valid order of term 6 runs the hook once"
cmd quit
agent_stop
grep -Eq 'stopping.*rejected_msgs=1[0-9]' "$E" || fail "stop line without the refusals counted: $(grep stopping "$E")"
grep -Eq 'stopping.*stale_orders=3' "$E" || fail "stale orders not counted: $(grep stopping "$E")"
ok "refusals counted ($(grep -o 'rejected_msgs=[0-9]*' "$E"), $(grep -o 'stale_orders=[0-9]*' "$E"))"
n=$(sc_check_logfmt "$TMP"/*.err)
ok "every log line one logfmt record, hostile text escaped ($n)"
