#!/usr/bin/env bash
# Builds everything twice and runs every test in both builds:
#   build/      GCC, Release (what the image ships; RelWithDebInfo, the
#               default, and Debug build too)
#   build-asan/ clang with AddressSanitizer, UndefinedBehaviorSanitizer and
#               -Wthread-safety (checks the ABSL_GUARDED_BY annotations)
# then fuzzes each libFuzzer target for 30 s (scripts/fuzz.sh), and,
# once, after the GCC tests, the runtime tests (tests/runtime/run.py:
# the image built and run by podman, workload containers from the plugin's
# answers), which need root, podman and runc (see the README).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
jobs=$(nproc)

echo "== GCC build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 120)

echo "== runtime tests: podman + runc (tests/runtime)"
# Rootful podman and real device nodes: through sudo when not root.
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo /usr/bin/python3 tests/runtime/run.py --build build

echo "== clang + ASan/UBSan build"
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja \
  -DCMAKE_BUILD_TYPE=Debug -DGDP_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan &&
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j"$jobs" --timeout 240)

echo "== fuzzing (bounded; fuzz/)"
./scripts/fuzz.sh build-asan 30
