#!/usr/bin/env bash
# Checks the layering STYLE.md asks for:
#  - common/ and proto/ are libraries that never log (they return errors with a reason; the
#    daemons in agent/ and coordinator/ log), nor print: commands live with the programs
#    (schedcoordctl keygen is coordinator/sc_keygen.c);
#  - only tests/ builds test tools: the programs' CMakeLists name nothing under tests/;
#  - the stores are sealed: SQL and sqlite3 handles only in common/sc_db.c, the coordinator's
#    store (coordinator/sc_store.c, sc_store_snap.c and its log table, sc_dlog.c, which only
#    the store calls) and the agent's (agent/sc_agent_state.c); sc_store_test.h only in tests;
#  - the coordinator stays split by job: no coordinator/sc_coord*.c over 700 lines.
set -euo pipefail
cd "${SC_SRC:-$(dirname "$0")/../..}"
fail=0

# A call of the logger (sc_log_warn(...), sc_log_q(...), ...) or its header, outside sc_log itself.
if hits=$(grep -nE '\bsc_log_[a-z_]+\(|#include "sc_log\.h"' common/*.c common/*.h proto/*.c \
    proto/*.h | grep -vE '^common/sc_log\.[ch]:'); then
    echo "layers: common/ and proto/ must not log; return the reason and let the caller log:"
    echo "$hits"
    fail=1
fi

if hits=$(grep -nE '\bprintf\(|\bputs\(|fprintf\((stdout|stderr)' common/*.c proto/*.c |
    grep -vE '^common/sc_log\.c:'); then
    echo "layers: common/ and proto/ must not print; a command belongs to agent/ or coordinator/:"
    echo "$hits"
    fail=1
fi

if hits=$(grep -nE 'tests/' common/CMakeLists.txt proto/CMakeLists.txt agent/CMakeLists.txt \
    coordinator/CMakeLists.txt); then
    echo "layers: test tools are built by tests/ only:"
    echo "$hits"
    fail=1
fi

sealed='^(common/sc_db|coordinator/sc_store|coordinator/sc_store_snap|coordinator/sc_dlog|agent/sc_agent_state)\.c:'
if hits=$(grep -nE '\bsqlite3|\bsc_db_[a-z_]+\(|sc_store_test\.h' common/*.c proto/*.c agent/*.c \
    coordinator/*.c | grep -vE "$sealed"); then
    echo "layers: SQL and database handles stay inside the stores; use their functions:"
    echo "$hits"
    fail=1
fi

max_lines=700
for f in coordinator/sc_coord*.c; do
    n=$(wc -l <"$f")
    if [ "$n" -gt "$max_lines" ]; then
        echo "layers: $f has $n lines, over $max_lines: give a job its own file" \
            "(coordinator/sc_coord_int.h lists them)"
        fail=1
    fi
done

[ "$fail" = 0 ] && echo "layers: clean"
exit "$fail"
