#!/usr/bin/env bash
# Bad wire messages to the coordinator's ROUTER (--insecure; tests/integration/fault/wire.py):
# garbage, truncated JSON, empty, NUL, bad UTF-8, trailing data, wrong version, unknown type,
# unknown field, out-of-range and float integers, deep nesting, a sender that is not a member
# or not a name, hook_progress for an unknown event, orders / approve_via sent TO it, documents
# whose IMDS content is invalid, a multi-frame message, and over 1 MiB (ZMQ_MAXMSGSIZE). The
# coordinator keeps running, logs each with a reason naming the problem, counts it
# (status: rejected_messages), its state (members, term, events) is intact, and a rollout
# afterwards completes safely.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"
PY=python3
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import zmq' 2>/dev/null; then PY=$p; break; fi
done
"$PY" -c 'import zmq' || fail "python3-zmq is missing (deploy/install-deps.sh --test)"

sim_start --vms 3 --fault-domains 3 --time-scale 100 --complete-after 100
set_start 3
coord_start --log-level info
wait_for 20 all_members_seen 3 || fail "members not all seen"
# an event in progress before the barrage: a Reboot of vm_2 (the coordinator drains vm_2 then
# approves), notice 30000 simulated s = 300 s, more than the test lasts: rollout_checked's
# --all-approved below counts it too, and it must be ours to approve however slow the barrage
EV=$(curl -sS -f -d '{"EventType":"Reboot","Resources":["vm_2"],"NoticeSeconds":30000}' \
    "$B/control/events" | jq -r .EventId)
wait_for 10 sh -c "$SC_BIN/schedcoordctl --state-dir $TMP/coord status --json | jq -e '.events[] | select(.EventId == \"$EV\")' >/dev/null" ||
    fail "event not registered"
ctl status --json >"$TMP/before.json"
r0=$(jq .rejected_messages "$TMP/before.json")
term0=$(jq .term "$TMP/before.json")

EP=$(echo "$MEMBERS" | tr ',' '\n' | sed -n 's/^vm_0=/tcp:\/\//p')
"$PY" "$SC_SRC/tests/integration/fault/wire.py" coord "$EP" vm_2 "$TMP/sent.json" ||
    fail "sender failed"
kill -0 "$COORD_PID" || fail "coordinator died"
ok "coordinator alive after $(jq '.sent | length' "$TMP/sent.json") bad messages"

# every bad message but the oversize one (dropped by libzmq before us) counted once the
# coordinator has handled them all (it may lag the sender on a loaded machine)
n=$(($(jq '.sent | length' "$TMP/sent.json") - 1))
rejected() { r1=$(ctl status --json | jq .rejected_messages) && [ $((r1 - r0)) -ge "$n" ]; }
wait_for 20 rejected || true

# every refusal logged with a reason naming the problem
E="$TMP/coord.err"
for pat in 'reject=not_json' 'reject=version' 'reject=type' 'reject=unknown' 'reject=field' \
    'reject=document' 'message from a non-member refused.*from=stranger' \
    'hook progress for an unknown event ignored.*event=no-such-event' \
    'order is not for coordinators' 'approve_via is not for coordinators' \
    'more than one frame'; do
    grep -Eq "$pat" "$E" || fail "no log line matching /$pat/"
done
grep -E 'message refused' "$E" | grep -v 'why="' | grep . >/dev/null && fail "a refusal without a reason"
grep -q 'NUL\|nul' "$E" || fail "the NUL byte refusal does not say NUL"
grep -qi 'utf-8\|utf8' "$E" || fail "the bad UTF-8 refusal does not say UTF-8"
grep -q 'colour' "$E" || fail "the unknown field is not named"
grep -q 'running_hooks' "$E" || fail "the out-of-range field is not named"
ok "each refusal logged with its class and a reason naming the field or problem"

# counted: exactly those (a second look, after the logs were read: nothing more came)
r1=$(ctl status --json | jq .rejected_messages)
[ $((r1 - r0)) -eq "$n" ] || fail "rejected_messages grew by $((r1 - r0)), expected $n: $(grep -c 'refused\|ignored' "$E") log lines"
ok "rejected_messages counted $n refusals"

# state intact: term, members, the event and its drain progress
ctl status --json >"$TMP/after.json"
[ "$(jq .term "$TMP/after.json")" = "$term0" ] || fail "term changed"
[ "$(jq '[.members[] | select(.alive)] | length' "$TMP/after.json")" -eq 3 ] || fail "members: $(jq -c .members "$TMP/after.json")"
jq -e ".events[] | select(.EventId == \"$EV\")" "$TMP/after.json" >/dev/null || fail "event forgotten"
jq -e '.events[] | select(.EventId == "x" or .EventId == "some-event" or .EventId == "no-such-event")' \
    "$TMP/after.json" >/dev/null && fail "an event from a refused message was registered"
ok "term, members and events intact; nothing from a refused message applied"

# and it still works: the event (and a rollout over the 3 fault domains) completes safely
rollout_checked 4 60
ok "afterwards the pending event and a 3-FD rollout complete safely (check.py)"
coord_stop
n=$(sc_check_logfmt "$TMP"/*.err)
ok "every log line one logfmt record, hostile text escaped ($n)"
