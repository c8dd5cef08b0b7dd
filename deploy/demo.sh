#!/usr/bin/env bash
# The main job on an embedded default: a local availability set on loopback (simulated IMDS,
# agents, coordinator) going through a maintenance. Installs what is missing, builds into
# build/, runs, cleans up after itself. Runs as much of the system as exists, and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
echo "schedcoord demo: built into build/bin:"
ls build/bin 2>/dev/null | sed 's/^/  /'
if [[ ! -x build/bin/imds-sim ]]; then
  echo "imds-sim, the agent and the coordinator have not landed yet: nothing more to show."
  exit 0
fi
