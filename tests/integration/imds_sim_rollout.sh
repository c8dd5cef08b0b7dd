#!/usr/bin/env bash
# imds-sim: --on-impact runs CMD <phase> <vm> <EventType> <EventId> in order (for a Terminated
# VM, its start only); the timeline file and GET /control/timeline carry the fixed fields;
# POST /control/maintenance rolls out one fault domain after another (the next event created
# only after the previous completed).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"

hook="$TMP/hook.sh"; log="$TMP/hook.log"; tl="$TMP/timeline.jsonl"
rm -f "$log" "$tl"
cat >"$hook" <<HOOK
#!/bin/sh
echo "\$*" >>"$log"
HOOK
chmod +x "$hook"

# X=600: a 60 s notice is 0.1 s, a 60 s impact 0.1 s, completion 120 s after start 0.2 s.
sim_start --vms 6 --fault-domains 3 --time-scale 600 --complete-after 120 \
    --timeline "$tl" --on-impact "$hook extra-arg"
r=$(curl -sS -f -d '{"EventType":"Reboot","NoticeSeconds":60,"DurationInSeconds":60}' "$B/control/maintenance")
rid=$(echo "$r" | jq -r .RolloutId)
eq "$(echo "$r" | jq '.EventIds | length')" 1 "first EventId returned"
wait_for 10 sh -c "curl -s '$B/control/state' | jq -e '.rollouts[0].done' >/dev/null" || fail "rollout not done"
st=$(state)
eq "$(echo "$st" | jq -c '.rollouts[0].FaultDomains')" '[0,1,2]' "fault domains in order"
eq "$(echo "$st" | jq '[.events[] | select(.rollout == "'"$rid"'")] | length')" 3 "one event per fault domain"
eq "$(echo "$st" | jq -c '[.events[] | [.fault_domain, (.Resources|join(","))]]')" '[[0,"vm_0,vm_3"],[1,"vm_1,vm_4"],[2,"vm_2,vm_5"]]' "resources by FD"
eq "$(echo "$st" | jq -c '[.events[].started_how] | unique')" '["not_before"]' "started at NotBefore"
# Each fault domain's event is created only after the previous one completed.
tlj=$(timeline)
echo "$tlj" | jq -e '
  [.[] | select(.kind == "created" or .kind == "completed")] as $f
  | [range(0; $f|length)] | map($f[.]) | map(.kind + ":" + (.fault_domain|tostring)) ==
    ["created:0","completed:0","created:1","completed:1","created:2","completed:2"]' >/dev/null \
  || fail "rollout order: $(echo "$tlj" | jq -c '[.[] | select(.kind == "created" or .kind == "completed") | [.kind, .fault_domain]]')"
# (the VMs impacted at each moment: an impact_start of another fault domain while any is open
# fails; every one of the 6 VMs impacted, every impact ended)
echo "$tlj" | jq -e '[.[] | select(.kind == "impact_start" or .kind == "impact_end")]
  | (map(select(.kind == "impact_start")) | length) == 6 and
    (reduce .[] as $x ({open: {}, ok: true};
        if $x.kind == "impact_start"
        then (if any(.open[]; . != $x.fault_domain) then .ok = false else . end) | .open[$x.vm] = $x.fault_domain
        else del(.open[$x.vm]) end) | .ok and .open == {})' >/dev/null \
  || fail "two fault domains impacted at once: $(echo "$tlj" | jq -c '[.[] | select(.kind == "impact_start" or .kind == "impact_end") | [.kind, .vm, .fault_domain]]')"
ok "maintenance rollout: FD 0, then 1, then 2, each created after the previous completed"

# --- --on-impact: start and end for every VM, in order, with the fixed arguments
wait_for 5 sh -c "[ \$(wc -l <'$log') -ge 12 ]" || fail "hook ran $(wc -l <"$log") times, expected 12"
for vm in vm_0 vm_1 vm_2 vm_3 vm_4 vm_5; do
    lines=$(grep " $vm " "$log" | cut -d' ' -f1-4 | tr '\n' '|')
    eq "$lines" "extra-arg start $vm Reboot|extra-arg end $vm Reboot|" "hook lines for $vm"
done
ev0=$(echo "$st" | jq -r '.events[0].EventId')
grep -q "^extra-arg start vm_0 Reboot $ev0\$" "$log" || fail "hook EventId"
ok "--on-impact runs CMD start/end <vm> <EventType> <EventId> for every impacted VM, in order"

# --- a Terminated VM is deleted: its start runs, then nothing (no end, no later event)
tid=$(create '{"EventType":"Terminate","Resources":["vm_5"],"NoticeSeconds":60,"DurationInSeconds":60}')
wait_for 5 sh -c "[ \"\$(curl -s '$B/control/events/$tid' | jq -r .EventStatus)\" = Completed ]" || fail "Terminate never completed"
# a later event run to its end: time enough for a (wrong) end of vm_5 to show
rid2=$(create '{"EventType":"Reboot","Resources":["vm_2"],"NoticeSeconds":60,"DurationInSeconds":60}')
wait_for 5 sh -c "grep -q '^extra-arg end vm_2 Reboot $rid2\$' '$log'" || fail "vm_2's hook for the later Reboot never ended"
eq "$(grep " vm_5 Terminate " "$log" | cut -d' ' -f1-4 | tr '\n' '|')" "extra-arg start vm_5 Terminate|" "hook lines for the Terminated vm_5"
eq "$(grep -c " vm_5 " "$log")" 3 "vm_5: its Reboot start/end and the Terminate start, nothing more"
ok "--on-impact: a Terminated VM gets its start and nothing after"

# --- the timeline: file = /control/timeline, fixed fields
sim_stop
n_file=$(wc -l <"$tl")
[ "$n_file" -eq "$(echo "$tlj" | jq length)" ] || [ "$n_file" -gt "$(echo "$tlj" | jq length)" ] || fail "file shorter than /control/timeline"
jq -s -e 'all(.[]; (.wall|type) == "number" and (.sim|type) == "number" and
    (.kind | IN("get","post","created","approved","started","impact_start","impact_end","completed","cancelled")))' "$tl" >/dev/null || fail "timeline fields"
jq -s -e 'all(.[] | select(.kind == "impact_start" or .kind == "impact_end"); (.vm|type) == "string" and (.event|type) == "string" and (.fault_domain|type) == "number")' "$tl" >/dev/null || fail "impact fields"
jq -s -e 'all(.[] | select(.kind == "started"); .how == "not_before" and (.event|type) == "string")' "$tl" >/dev/null || fail "started fields"
# sim runs 600 times faster than wall
jq -s -e '(.[-1].sim - .[0].sim) / (.[-1].wall - .[0].wall) | . > 550 and . < 650' "$tl" >/dev/null || fail "sim/wall ratio"
eq "$(jq -s -c '[.[] | del(.seq)]' "$tl" | head -c 300)" "$(echo "$tlj" | jq -c '[.[] | del(.seq)]' | head -c 300)" "file vs /control/timeline"
ok "timeline file and /control/timeline: wall, sim (x600), kind, vm, event, how, fault_domain"

# --- gets and posts in the timeline, with status and events
sim_start --vms 2 --fault-domains 2 --timeline "$TMP/t2.jsonl"
id=$(create '{"EventType":"Freeze","Resources":["vm_0"],"DurationInSeconds":0}')
imds vm_1 >/dev/null
approve vm_1 "$id" >/dev/null
approve vm_1 nope >/dev/null
t=$(timeline)
eq "$(echo "$t" | jq -c '[.[] | select(.kind == "get" or .kind == "post") | [.kind, .vm, .status]]')" '[["get","vm_1",200],["post","vm_1",200],["post","vm_1",400]]' "get/post facts"
eq "$(echo "$t" | jq -r '[.[] | select(.kind == "post")][0].events[0]')" "$id" "post events"
eq "$(echo "$t" | jq -c '[.[] | select(.event == "'"$id"'") | .kind]')" '["created","approved","started","impact_start","impact_end"]' "Freeze 0 s"
sim_stop
ok "get/post facts carry vm, status, events"
echo "imds_sim_rollout: all passed"
