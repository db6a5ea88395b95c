#!/usr/bin/env bash
# Builds everything twice and runs every test in both builds:
#   build/      GCC, Release (what the image ships; RelWithDebInfo, the
#               default, and Debug build too)
#   build-asan/ clang with AddressSanitizer, UndefinedBehaviorSanitizer and
#               -Wthread-safety (checks the ABSL_GUARDED_BY annotations);
#               no benchmarks (no test runs them)
# then fuzzes each libFuzzer target for 30 s (scripts/fuzz.sh), and,
# once, after the GCC tests, the runtime tests (tests/runtime/run.py:
# the image built and run by podman, workload containers from the plugin's
# answers), which need root, podman and runc (see the README).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's time, printed as it ends and again at the end, so a CI log
# shows where the 45 minutes go.
times=()
phase_start=$SECONDS
phase_name="deps"
end_phase() {
  times+=("$(printf '%-28s %5d s' "$phase_name" $((SECONDS - phase_start)))")
  echo "== ${times[-1]}"
}
phase() {
  end_phase
  phase_name=$1
  phase_start=$SECONDS
  echo "== $1"
}
report_times() {
  end_phase
  echo "== time per phase:"
  printf '  %s\n' "${times[@]}"
  echo "  total $SECONDS s"
}
trap report_times EXIT

./scripts/deps.sh
jobs=$(nproc)

phase "GCC build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
phase "GCC tests"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 120)

phase "runtime tests (podman+runc)"
# Rootful podman and real device nodes: through sudo when not root.
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo /usr/bin/python3 tests/runtime/run.py --build build

phase "clang ASan/UBSan build"
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja \
  -DCMAKE_BUILD_TYPE=Debug -DGDP_SANITIZE=ON -DGDP_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
phase "ASan/UBSan tests"
(cd build-asan &&
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j"$jobs" --timeout 240)

phase "fuzzing (bounded; fuzz/)"
./scripts/fuzz.sh build-asan 30
