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
follows() { [ "$(cst "$L" | jq -r '.role + " " + (.leader // "")')" = "voter $N" ]; }
wait_for 15 follows || fail "$L woken does not follow $N: $(cst "$L" | jq -c '{role, leader, term, may_act}')"
acted=$(awk -v w="$woke" '$1 >= w' "$(coord_err "$L")" | grep -E 'msg="(prepare ordered|recover ordered|approved|approval delegated)"' || true)
[ -z "$acted" ] || fail "$L acted after it woke: $acted"
awk -v w="$woke" '$1 >= w' "$(coord_err "$L")" | grep 'msg="stalled: ' >/dev/null ||
    fail "$L did not see its stall: $(awk -v w="$woke" '$1 >= w' "$(coord_err "$L")" | head -5)"
ok "$L woke, saw the stall, acted on nothing and follows $N"
election_rollout_end "$N"
ok "the rollout went on under $N: every rule kept, one coordinator acting at a time"
for p in "${CPIDS[@]}"; do sc_stop coordinator "$p"; done
coord_stop
