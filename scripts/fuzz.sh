#!/usr/bin/env bash
# Fuzzes each libFuzzer target of a clang sanitizer build for a bounded time,
# starting from its committed corpus (fuzz/corpus/<name>); new inputs go to
# a scratch directory, not the repository. A crash, a leak, a timeout (20 s
# per input) or more than 2 GiB fails, and leaves the input as
# <build>/fuzz-artifacts/<name>/crash-...: add it to fuzz/corpus/<name>
# with the fix, so the corpus replay test (ctest fuzz_corpus_<name>) keeps
# it fixed.
# Usage: scripts/fuzz.sh [BUILD_DIR] [SECONDS_EACH]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
seconds=${2:-60}
status=0
for corpus in fuzz/corpus/*/; do
  name=$(basename "$corpus")
  bin="$build/fuzz/${name}_fuzz"
  if [ ! -x "$bin" ]; then
    echo "fuzz: $bin is not built (a clang -DGDP_SANITIZE=ON build has it)" >&2
    exit 1
  fi
  scratch=$(mktemp -d)
  artifacts="$build/fuzz-artifacts/$name"
  mkdir -p "$artifacts"
  echo "== fuzzing $name for ${seconds}s"
  if ! ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$seconds" \
      -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "$scratch" "$corpus" \
      >"$artifacts/log" 2>&1; then
    echo "fuzz: $name FAILED; input and log in $artifacts:" >&2
    tail -40 "$artifacts/log" >&2
    status=1
  else
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" \
      "$artifacts/log" | sed "s/^/  $name /"
  fi
  rm -rf "$scratch"
done
exit $status
