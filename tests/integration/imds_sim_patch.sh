#!/usr/bin/env bash
# imds-sim: PATCH /control/events/<id> changes a Scheduled event (Resources, DurationInSeconds,
# EventType, NoticeSeconds); the DocumentIncarnation of exactly the VMs that see the event,
# before or after the change, moves (--own-events-only VMs see it appear and disappear);
# NotBefore moves with NoticeSeconds and the fabric starts the event then; 409 once Started or
# finished, 404 for an unknown event, 400 naming the bad field; an "updated" timeline fact.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/imds-sim/testlib.sh"

# incs -> every VM's DocumentIncarnation, a JSON array by VM
incs() { state | jq -c '[.vms[].incarnation]'; }
# moved_since INCS -> how far each VM's DocumentIncarnation moved since INCS (an incs)
moved_since() { jq -nc --argjson a "$1" --argjson b "$(incs)" '[range($a | length) as $i | $b[$i] - $a[$i]]'; }
# patch_ok ID JSON DELTAS WHAT: the PATCH is answered 200 with the event as GET
# /control/events/ID shows it, and each VM's DocumentIncarnation moved by DELTAS (by VM)
patch_ok() {
    local before ans
    before=$(incs)
    ans=$(curl -sS -f -X PATCH -d "$2" "$B/control/events/$1") || fail "$4: PATCH $2 refused"
    eq "$(echo "$ans" | jq -S -c .)" "$(curl -sS "$B/control/events/$1" | jq -S -c .)" "$4: the answer is the event"
    eq "$(moved_since "$before")" "$3" "$4: incarnations moved by"
}
# patch_refused ID JSON STATUS TEXT: the PATCH is answered STATUS, its error naming TEXT
patch_refused() {
    local r
    r=$(curl -s -w ' %{http_code}' -X PATCH -d "$2" "$B/control/events/$1")
    [[ "$r" == *"$4"*" $3" ]] || fail "PATCH $2: expected $3 naming [$4], got $r"
}
# sees VM ID -> how many events with that EventId VM's own document shows
sees() { imds "$1" | jq --arg id "$2" '[.Events[] | select(.EventId == $id)] | length'; }
# updated ID -> the event's "updated" facts: [changed field names...] each, one a line
updated() {
    timeline | jq -c --arg id "$1" '.[] | select(.kind == "updated" and .event == $id) |
        [keys[] | select(IN("resources", "duration", "event_type", "not_before"))]'
}

# FD = i mod 3; vm_4 (FD 1) and vm_5 (FD 2) see only the events naming them. --time-scale 1:
# the notices below (an hour) never run out during the test unless a PATCH says so.
sim_start --vms 6 --fault-domains 3 --own-events-only vm_4,vm_5 --rate-limit 0
id=$(create '{"EventType":"Reboot","Resources":["vm_0"],"NoticeSeconds":3600,"DurationInSeconds":60}')
eq "$(sees vm_4 "$id")$(sees vm_5 "$id")" 00 "vm_4 and vm_5 do not see an event on vm_0"

# --- Resources: a VM added sees the event appear, a VM removed sees it disappear; every VM
#     that sees every event moves too
patch_ok "$id" '{"Resources":["vm_0","vm_4"]}' '[1,1,1,1,1,0]' "vm_4 added"
eq "$(sees vm_4 "$id")$(sees vm_5 "$id")" 10 "vm_4 sees the event, vm_5 not"
eq "$(imds vm_4 | jq -c --arg id "$id" '.Events[] | select(.EventId == $id) | .Resources')" '["vm_0","vm_4"]' "Resources in vm_4's document"
eq "$(ev_field "$id" fault_domain)" null "FD 0 and FD 1: no one fault domain"
patch_ok "$id" '{"Resources":["vm_5"]}' '[1,1,1,1,1,1]' "vm_0 and vm_4 removed, vm_5 added"
eq "$(sees vm_4 "$id")$(sees vm_5 "$id")" 01 "vm_4 no longer sees the event, vm_5 does"
eq "$(ev_field "$id" fault_domain)" 2 "on vm_5 alone: FD 2"
ok "Resources: the incarnations of the VMs that see the event, before or after, move"

# --- DurationInSeconds, EventType: the document changes for every VM that sees the event
patch_ok "$id" '{"DurationInSeconds":5}' '[1,1,1,1,0,1]' "DurationInSeconds"
patch_ok "$id" '{"EventType":"Freeze"}' '[1,1,1,1,0,1]' "EventType"
eq "$(imds vm_5 | jq -c --arg id "$id" '.Events[] | select(.EventId == $id) | [.EventType, .DurationInSeconds, .EventStatus, .Description]')" \
    '["Freeze",5,"Scheduled","Virtual machine is being paused because of a memory-preserving Live Migration operation."]' \
    "vm_5's document: the new type, its default Description, the new duration"
patch_ok "$id" '{"DurationInSeconds":5,"EventType":"Freeze","Resources":["vm_5"]}' '[0,0,0,0,0,0]' "the same values again"
ok "DurationInSeconds and EventType change the document; a PATCH that changes nothing moves nothing"

# --- NoticeSeconds: NotBefore = the change's time + NoticeSeconds (rounded up to the second),
#     earlier or later than before
# nb_ms ID -> NotBefore in vm_5's document, Unix ms
nb_ms() { echo $(($(date -d "$(imds vm_5 | jq -r --arg id "$1" '.Events[] | select(.EventId == $id) | .NotBefore')" +%s) * 1000)); }
# updated_ms ID -> wall time (ms) of the event's last "updated" fact
updated_ms() { timeline | jq -r --arg id "$1" '[.[] | select(.kind == "updated" and .event == $id) | .wall * 1000 | round] | last'; }
for notice in 7200 120; do
    patch_ok "$id" "{\"NoticeSeconds\":$notice}" '[1,1,1,1,0,1]' "NoticeSeconds $notice"
    d=$(($(nb_ms "$id") - $(updated_ms "$id")))
    ((d >= notice * 1000 && d < notice * 1000 + 1000)) || fail "NoticeSeconds $notice: NotBefore $d ms after the change"
    eq "$(timeline | jq -r --arg id "$id" '[.[] | select(.kind == "updated" and .event == $id)] | last | .not_before')" \
        "$(imds vm_5 | jq -r --arg id "$id" '.Events[] | select(.EventId == $id) | .NotBefore')" "the fact's not_before"
done
ok "NoticeSeconds moves NotBefore to the change's time + NoticeSeconds"

eq "$(updated "$id" | paste -sd ' ')" \
    '["resources"] ["resources"] ["duration"] ["event_type"] [] ["not_before"] ["not_before"]' "updated facts: the changed fields"
ok "an \"updated\" fact per PATCH, with the fields it changed"

# --- 400 names the bad field (the event unchanged); 404 for an unknown event
before=$(curl -sS "$B/control/events/$id")
patch_refused "$id" '' 400 'empty body'
patch_refused "$id" '{}' 400 'Resources, DurationInSeconds, EventType, NoticeSeconds'
patch_refused "$id" '{"Status":"Started"}' 400 'unknown field \"Status\"'
patch_refused "$id" '{"Resources":[]}' 400 'Resources must be a non-empty array'
patch_refused "$id" '{"Resources":"vm_1"}' 400 'Resources must be a non-empty array'
patch_refused "$id" '{"Resources":["vm_1","vm_9"]}' 400 'Resources: no VM named \"vm_9\"'
patch_refused "$id" '{"Resources":["vm_1","vm_1"]}' 400 'Resources: \"vm_1\" named twice'
patch_refused "$id" '{"DurationInSeconds":86401}' 400 'DurationInSeconds must be'
patch_refused "$id" '{"DurationInSeconds":"5"}' 400 'DurationInSeconds must be'
patch_refused "$id" '{"EventType":"Nap"}' 400 'EventType must be'
patch_refused "$id" '{"NoticeSeconds":604801}' 400 'NoticeSeconds must be'
patch_refused "$id" '{"DurationInSeconds":5,"NoticeSeconds":-1}' 400 'NoticeSeconds must be'
patch_refused 00000000-0000-4000-8000-000000000000 '{"DurationInSeconds":5}' 404 'no event'
eq "$(curl -sS "$B/control/events/$id")" "$before" "the event unchanged by refused PATCHes"
ok "400 naming the field for bad values, unknown fields, an empty body; 404 for an unknown event"

# --- NoticeSeconds 0: the fabric starts the event at its new NotBefore (how=not_before);
#     a Started event, and a finished one, can no longer be changed (409)
#     (not patch_ok: the event may start between the answer and a GET)
before=$(incs)
eq "$(curl -sS -f -X PATCH -d '{"NoticeSeconds":0}' "$B/control/events/$id" | jq -r .EventStatus)" Scheduled "NoticeSeconds 0: answered Scheduled"
wait_for 5 sh -c "[ \"\$(curl -s '$B/control/events/$id' | jq -r .EventStatus)\" = Started ]" || fail "never started at its new NotBefore"
eq "$(moved_since "$before")" '[2,2,2,2,0,2]' "NoticeSeconds 0, then Started: incarnations moved by"
eq "$(ev_field "$id" started_how)" not_before "how=not_before"
patch_refused "$id" '{"DurationInSeconds":10}' 409 'is Started: only a Scheduled event can be changed'
idc=$(create '{"EventType":"Redeploy","Resources":["vm_1"],"NoticeSeconds":3600}')
eq "$(code -X DELETE "$B/control/events/$idc")" 200 "cancel"
patch_refused "$idc" '{"DurationInSeconds":10}' 409 'is Cancelled: only a Scheduled event can be changed'
ok "409 once Started or finished"

# --- a rollout's event may be patched like any other
first=$(curl -sS -f -d '{"EventType":"Reboot","FaultDomains":[1],"NoticeSeconds":3600}' "$B/control/maintenance" | jq -r '.EventIds[0]')
patch_ok "$first" '{"Resources":["vm_1"]}' '[1,1,1,1,1,0]' "a rollout's event loses vm_4"
eq "$(ev_field "$first" '[.rollout, (.Resources | join(","))] | join(" ")')" "rollout-1 vm_1" "still the rollout's event"
sim_stop
ok "a rollout's event may be patched"
echo "imds_sim_patch: all passed"
