#!/usr/bin/env bash
# Builds Release and runs the benchmarks, writing bench/RESULTS.md.
# Usage: bench/run.sh [--calls N] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j"$(nproc)" --target plugin_bench gpu-device-plugin fake_nvml fake-nvml
table=$(build-bench/bench/plugin_bench --plugin build-bench/src/gpu-device-plugin \
  --fake-lib build-bench/fake_nvml/lib --machine fake_nvml/machines/dgx-a100.yaml \
  --rootfs-tool build-bench/fake_nvml/fake-nvml "$@")
cat > bench/RESULTS.md <<EOT
# Benchmark results

Produced by \`bench/run.sh${*:+ $*}\` (Release build) on $(nproc) cores,
$(awk '/model name/ {sub(/.*: /, ""); print; exit}' /proc/cpuinfo), $(date -u +%Y-%m-%d).
The plugin runs on the fake NVML's \`dgx-a100\` (8 GPUs) against an
in-process kubelet that dials back like the real one. Allocate asks for 2 GPUs
in one container request; the echo floor is a bare gRPC server in its own
process, on the same kind of unix socket and the same gRPC callback API,
answering Allocate by echoing the IDs. Both are timed in the same run, in
alternating blocks of 500 calls, after 500 warm-up calls each.

$table
EOT
cat bench/RESULTS.md
