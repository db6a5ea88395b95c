#!/usr/bin/env bash
# Fuzzes each libFuzzer target of a clang sanitizer build for a bounded time,
# starting from its committed corpus (fuzz/corpus/<name>); new inputs go to
# a scratch directory, not the repository. A crash, a leak, a timeout (20 s
# per input) or more than 2 GiB fails, and leaves the input as
# <build>/fuzz-artifacts/<name>/crash-...: add it to fuzz/corpus/<name>
# with the fix, so the corpus replay test (ctest fuzz_corpus_<name>) keeps
# it fixed. Targets run side by side, one per CPU (each is one thread), so
# every target gets its full time and CI waits about targets / CPUs times
# SECONDS_EACH.
# Usage: scripts/fuzz.sh [BUILD_DIR] [SECONDS_EACH]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
seconds=${2:-60}
jobs=$(nproc)

# Fuzzes one target; its summary or failure goes to <artifacts>/summary.
fuzz_one() {
  local name=$1 corpus=$2 bin=$3
  local artifacts="$build/fuzz-artifacts/$name"
  local scratch
  scratch=$(mktemp -d)
  if ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$seconds" \
      -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "$scratch" "$corpus" \
      >"$artifacts/log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" \
      "$artifacts/log" | sed "s/^/  $name /" >"$artifacts/summary" || true
  else
    { echo "fuzz: $name FAILED; input and log in $artifacts:"
      tail -40 "$artifacts/log"; } >"$artifacts/summary"
    touch "$artifacts/failed"
  fi
  rm -rf "$scratch"
}

names=()
for corpus in fuzz/corpus/*/; do
  name=$(basename "$corpus")
  bin="$build/fuzz/${name}_fuzz"
  if [ ! -x "$bin" ]; then
    echo "fuzz: $bin is not built (a clang -DGDP_SANITIZE=ON build has it)" >&2
    exit 1
  fi
  artifacts="$build/fuzz-artifacts/$name"
  mkdir -p "$artifacts"
  rm -f "$artifacts/failed" "$artifacts/summary"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "== fuzzing $name for ${seconds}s"
  fuzz_one "$name" "$corpus" "$bin" &
  names+=("$name")
done
wait

status=0
for name in "${names[@]}"; do
  artifacts="$build/fuzz-artifacts/$name"
  if [ -e "$artifacts/failed" ] || [ ! -e "$artifacts/summary" ]; then
    [ -e "$artifacts/summary" ] || echo "fuzz: $name ended without a summary" >&2
    cat "$artifacts/summary" >&2 2>/dev/null || true
    status=1
  else
    cat "$artifacts/summary"
  fi
done
exit $status
