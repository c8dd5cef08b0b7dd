#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with ASan + UBSan and -Werror into
# build/, runs every test through ctest, then (when clang is present) builds the libFuzzer
# targets into build-fuzz/ and fuzzes each for SC_FUZZ_SECONDS (default 20: the suite stays under 20 minutes).
# Exits non-zero on any failure.
#   SC_FUZZ_SECONDS=0 ./tests/run.sh     skip the timed fuzzing (the corpus replays still run)
#   ./tests/run.sh -R imds                extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/install-deps.sh --test

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DSC_SANITIZE=ON -DSC_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
# one job more than cores: most tests wait on timers, not the CPU; the nemesis seeds, which
# take both cores, count for two (PROCESSORS 2: tests/CMakeLists.txt)
ctest --test-dir build --output-on-failure -j"$((jobs + 1))" "$@"

fuzz_s=${SC_FUZZ_SECONDS:-20}
if [[ $# -eq 0 && "$fuzz_s" != 0 ]] && command -v clang >/dev/null; then
  CC=clang cmake -S . -B build-fuzz -DSC_FUZZ=ON -DSC_SANITIZE=ON -DSC_WERROR=ON \
    -DSC_FUZZ_SECONDS="$fuzz_s" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build-fuzz -j"$jobs" --target sc_fuzz_all
  ctest --test-dir build-fuzz --output-on-failure -L fuzz -j"$jobs"
fi
