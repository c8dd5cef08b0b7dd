#!/usr/bin/env bash
# A frozen leader (issue 11; an Azure Freeze, here SIGSTOP) mid-drain, until the voters have
# elected another leader (so frozen longer than an election timeout: the test waits for that
# election, not for a time). Woken (SIGCONT), the old
# leader sees its loop stalled (TILT; as leader, or as follower when the stop fell where it
# read the new term first) and acts on nothing — no order, no approval, no
# delegation in its log after it woke — until it has confirmed its lead with a quorum round,
# which it cannot: it steps down and follows. The rollout ends with every rule kept (check.py)
# and never two coordinators that may act at once (one_leader.py; the frozen one's acting ends
# when it was stopped).
. "${SC_SRC:-$(dirname "$0")/../..}/tests/integration/coord/lib.sh"

election_rollout
P=$(coord_pid "$L")
kill -STOP "$P"
echo "$L $(date +%s.%N)" >>"$TMP/killed" # it cannot act while stopped
new_leader() { local l; l=$(leader 3) && [ "$l" != "$L" ] && N=$l; }
wait_for 15 new_leader || { kill -CONT "$P"; fail "no new leader while $L is frozen"; }
woke=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
kill -CONT "$P"
ok "$L (term $T) frozen mid-drain until $N leads"
wait_for 15 follows_new "$L" "$T" || fail "$L woken does not follow a new leader: $(cst "$L" | jq -c '{role, leader, term, may_act}')"
followed=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
since_woke() { awk -v w="$woke" -v f="$followed" '$1 >= w && $1 <= f' "$(coord_err "$L")"; }
acted=$(since_woke | grep -E 'msg="(prepare ordered|recover ordered|approved|approval delegated)"' || true)
[ -z "$acted" ] || fail "$L acted after it woke: $acted"
since_woke | grep 'msg="stalled: ' >/dev/null || fail "$L did not see its stall: $(since_woke | head -5)"
ok "$L woke, saw the stall, acted on nothing and follows $F"
election_rollout_end "$F"
ok "the rollout went on under $F: every rule kept, one coordinator acting at a time"
for p in "${CPIDS[@]}"; do sc_stop coordinator "$p"; done
coord_stop
