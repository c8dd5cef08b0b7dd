#!/usr/bin/env bash
# Checks the layering STYLE.md asks for:
#  - common/ and proto/ are libraries that never log (they return errors with a reason; the
#    daemons in agent/ and coordinator/ log), nor print: commands live with the programs
#    (schedcoordctl keygen is coordinator/sc_keygen.c);
#  - only tests/ builds test tools: the programs' CMakeLists name nothing under tests/.
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

[ "$fail" = 0 ] && echo "layers: clean"
exit "$fail"
