#!/usr/bin/env bash
# End to end: notifications. A bad --notify is refused at start (exit 2, naming the target).
# Then imds-sim (6 VMs, 3 fault domains, x100) + 6 agents + the coordinator with --notify to
# four webhook receivers on loopback (json, slack, teams, and a json one that hangs on its first
# request about an event, then answers 500 three times). Through a 3-fault-domain Reboot
# rollout each receiver gets every notification, in order, in its format
# (coord/notify_check.py): leader_changed, then per event event_scheduled (at notice time, with
# the plan: stamped before the event's first prepare hook started), drain_started, approved,
# event_started, event_ended. The hung receiver holds nothing up: the first approval POST
# happens while it hangs (it is released only then), and it gets everything after its retries
# (counted: status counters and metrics). A coordinator killed and started again replays its
# log without telling anything again: the next messages are leader_changed (term 2) and the new
# events' — among them a prepare that fails (hook_failed) and a notice shorter than the
# deadline margin (deadline_missed).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

rc=0
out=$("$SC_BIN/schedcoord-coordinator" --name vm_0 --imds-url http://127.0.0.1:9 \
    --members vm_0=127.0.0.1:9 --state-dir "$TMP/bad" --insecure \
    --notify "json:http://127.0.0.1:9/a,mail:http://127.0.0.1:9/b" 2>&1) || rc=$?
[ "$rc" -eq 2 ] && grep -q 'notify target 2: unknown format "mail"' <<<"$out" ||
    fail "a bad --notify: exit $rc, \"$out\" (expected 2 naming target 2)"
ok "a bad --notify is refused at start (exit 2, naming the target)"

sim_start --vms 6 --fault-domains 3 --time-scale 100 --complete-after 100
webhook_start json
NOTIFY="json:$WEBHOOK/hook"
webhook_start slack
NOTIFY+=",slack:$WEBHOOK/services/T000/B000/secret"
SLACK=${WEBHOOK#http://}
webhook_start teams
NOTIFY+=",teams:$WEBHOOK/workflows/run?sig=secret"
webhook_start flaky --after 1 --fail 3 --hold "$TMP/hold"
NOTIFY+=",json:$WEBHOOK/flaky"
FLAKY=${WEBHOOK#http://}
set_start 6
coord_start --notify "$NOTIFY"
wait_for 20 all_members_seen 6 || fail "members not all seen: $(ctl status --json | jq -c .members)"

# The flaky receiver holds its second request (the first event_scheduled) until the simulator
# has seen an approval POST: the coordinator approves while one of its targets hangs.
approved_once() { [ "$(tl_count '.kind == "post" and .status == 200')" -ge 1 ]; }
(
    wait_for 60 approved_once
    : >"$TMP/hold"
) &
PIDS+=("$!")
rollout_checked 3 90
for r in json slack teams flaky; do
    wait_for 30 webhook_got "$r" 16 ||
        fail "receiver $r did not get the 16 notifications: $(jq -c '[.status, .body.kind // .body.text]' "$TMP/$r.jsonl")"
done
curl -sS "$B/control/state" >"$TMP/state.json"
python3 "$SC_SRC/tests/integration/coord/notify_check.py" --timeline "$TL" --hooks "$HOOKLOG" \
    --state "$TMP/state.json" --json "$TMP/json.jsonl" --same "slack:$TMP/slack.jsonl" \
    --same "teams:$TMP/teams.jsonl" --same "json:$TMP/flaky.jsonl" || fail "notifications"
ok "every receiver got the rollout's 16 notifications, in order, in its format"

post_wall=$(tl_wall '.kind == "post" and .status == 200')
held_until=$(jq -s 'map(select(.body.kind == "event_scheduled")) | min_by(.t) | .answered' "$TMP/flaky.jsonl")
in_order "$post_wall" "$held_until" ||
    fail "the first approval ($post_wall) did not happen while the flaky receiver hung (until $held_until)"
[ "$(jq -s 'map(select(.status != 200)) | length' "$TMP/flaky.jsonl")" -eq 3 ] ||
    fail "the flaky receiver's answers: $(jq -s -c 'map(.status)' "$TMP/flaky.jsonl")"
n=$(ctl status --json | jq -c '[.counters.notify[] | [.format, .sent, .failed, .dropped, .retried, .queued]]')
[ "$n" = '[["json",16,0,0,0,0],["slack",16,0,0,0,0],["teams",16,0,0,0,0],["json",16,0,0,3,0]]' ] ||
    fail "notify counters: $n"
ctl metrics >"$TMP/metrics.txt"
grep -qxF "schedcoord_notify_retried_total{target=\"4\",format=\"json\",endpoint=\"http://$FLAKY\"} 3" "$TMP/metrics.txt" &&
    grep -qxF "schedcoord_notify_sent_total{target=\"2\",format=\"slack\",endpoint=\"http://$SLACK\"} 16" "$TMP/metrics.txt" ||
    fail "notify metrics: $(grep '^schedcoord_notify' "$TMP/metrics.txt")"
! grep -q 'secret' "$TMP/metrics.txt" "$TMP/coord.err" || fail "a webhook's secret path in the metrics or the log"
ok "approved while a receiver hung; it got all after 3 retries (counted in status and metrics)"

# Killed (no snapshot at exit: the whole log is replayed) and started again. What it tells
# next is leader_changed (term 2), then only the new events': a Freeze (no drain), a Reboot
# whose first prepare fails (hook_failed, then drained again and approved), and a Reboot whose
# notice is shorter than --deadline-margin-s (deadline_missed, once, whoever starts it).
coord_crash
coord_start --notify "$NOTIFY" --prepare-retry-s 1 --deadline-margin-s 10
wait_for 20 webhook_got json 17 || fail "no leader_changed after the restart"
write_hook 2 0.3 prepare@1
F=$(new_event '{"EventType":"Freeze","Resources":["vm_1"],"NoticeSeconds":30000,"DurationInSeconds":5}')
H=$(new_event '{"EventType":"Reboot","Resources":["vm_2"],"NoticeSeconds":30000,"DurationInSeconds":30}')
wait_for 30 ev_over "$F" "$H" || fail "$F and $H not over: $(ctl events)"
# 3 s of notice, a 10 s margin: past its deadline when first seen (still Scheduled 3 s: seen so)
D=$(new_event '{"EventType":"Reboot","Resources":["vm_4"],"NoticeSeconds":300,"DurationInSeconds":30}')
wait_for 30 ev_over "$D" || fail "$D not over: $(ctl events)"
told() { # ID KIND...: the json receiver got exactly these kinds about event ID, in this order
    local id=$1 got
    shift
    got=$(jq -s -r --arg id "$id" '[.[] | select(.status == 200 and .body.event_id == $id) | .body.kind] | join(" ")' "$TMP/json.jsonl")
    [ "$got" = "$*" ]
}
wait_for 20 told "$F" event_scheduled approved event_started event_ended ||
    fail "Freeze $F: $(jq -c --arg id "$F" 'select(.body.event_id == $id) | .body.kind' "$TMP/json.jsonl")"
wait_for 20 told "$H" event_scheduled drain_started hook_failed approved event_started event_ended ||
    fail "Reboot $H: $(jq -c --arg id "$H" 'select(.body.event_id == $id) | .body.kind' "$TMP/json.jsonl")"
wait_for 20 jq -se --arg id "$D" '[.[] | select(.status == 200 and .body.event_id == $id) | .body.kind]
    | .[0] == "event_scheduled" and .[-1] == "event_ended" and (map(select(. == "deadline_missed")) | length) == 1' "$TMP/json.jsonl" ||
    fail "Reboot $D: $(jq -c --arg id "$D" 'select(.body.event_id == $id) | .body.kind' "$TMP/json.jsonl")"
jq -se --arg id "$H" 'map(select(.status == 200 and .body.kind == "hook_failed")) | length == 1 and
    (.[0].body | .event_id == $id and .phase == "prepare" and .vms == ["vm_2"] and .fault_domain == 2
     and .detail == "exit status 1")' "$TMP/json.jsonl" >/dev/null ||
    fail "hook_failed: $(jq -c 'select(.body.kind == "hook_failed") | .body' "$TMP/json.jsonl")"
got=$(jq -s -c --arg f "$F" --arg h "$H" --arg d "$D" '[.[] | select(.status == 200) | .body][16:]
    | [.[0].kind, .[0].term, (.[1:] | map(.event_id | IN($f, $h, $d)) | all)]' "$TMP/json.jsonl")
[ "$got" = '["leader_changed",2,true]' ] || fail "after the restart: $got"
ok "a restart replays without telling again; hook_failed and deadline_missed told"
coord_stop
