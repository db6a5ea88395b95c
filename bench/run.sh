#!/usr/bin/env bash
# Builds Release and runs the benchmarks, writing bench/RESULTS.md.
# Usage: bench/run.sh [--calls N] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j"$(nproc)" --target plugin_bench health_bench preferred_bench gpu-device-plugin fake_nvml fake-nvml
# A just-linked binary's page-cache pages are dirty until written back, and
# smaps would count them as the daemon's private dirty memory.
sync
bench() {
  build-bench/bench/plugin_bench --plugin build-bench/src/gpu-device-plugin \
    --fake-lib build-bench/fake_nvml/lib --rootfs-tool build-bench/fake_nvml/fake-nvml "$@"
}
small=$(bench --machine fake_nvml/machines/dgx-a100.yaml "$@")
# 8 GPUs x 7 MIG devices x 64 time-slicing replicas = 3,584 devices.
config=$(mktemp)
trap 'rm -f "$config"' EXIT
printf 'version: v1\nflags:\n  migStrategy: single\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 64\n' >"$config"
large=$(bench --machine fake_nvml/machines/hgx-h100-mig7.yaml --request 1 \
  --plugin-arg=--config-file="$config" --plugin-arg=--proc-root={root}/proc "$@")
hbench() {
  build-bench/bench/health_bench --plugin build-bench/src/gpu-device-plugin \
    --fake-lib build-bench/fake_nvml/lib --rootfs-tool build-bench/fake_nvml/fake-nvml "$@"
}
health_small=$(hbench --machine fake_nvml/machines/dgx-a100.yaml)
health_large=$(hbench --machine fake_nvml/machines/hgx-h100-mig7.yaml \
  --plugin-arg=--config-file="$config" --plugin-arg=--proc-root={root}/proc)
pbench() {
  build-bench/bench/preferred_bench --plugin build-bench/src/gpu-device-plugin \
    --fake-lib build-bench/fake_nvml/lib --rootfs-tool build-bench/fake_nvml/fake-nvml "$@"
}
ts16=$(mktemp)
trap 'rm -f "$config" "$ts16"' EXIT
printf 'version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 16\n' >"$ts16"
pref_8=$(pbench --machine fake_nvml/machines/dgx1-v100.yaml)
pref_8r=$(pbench --machine fake_nvml/machines/dgx1-v100.yaml --plugin-arg=--config-file="$ts16")
pref_16=$(pbench --machine fake_nvml/machines/dgx2-v100.yaml)
pref_16r=$(pbench --machine fake_nvml/machines/dgx2-v100.yaml --plugin-arg=--config-file="$ts16")
cat > bench/RESULTS.md <<EOT
# Benchmark results

Produced by \`bench/run.sh${*:+ $*}\` (Release build) on $(nproc) cores,
$(awk '/model name/ {sub(/.*: /, ""); print; exit}' /proc/cpuinfo), $(date -u +%Y-%m-%d).
The plugin runs on the fake NVML against an in-process kubelet that dials
back like the real one. The echo floor is a bare gRPC server in its own
process, on the same kind of unix socket and the same gRPC callback API,
answering Allocate by echoing the IDs. Both are timed in the same run, in
alternating blocks of 500 calls, after 500 warm-up calls each. The full
ListAndWatch list is timed from opening the stream to having the first
message decoded, 200 times after 20 warm-up opens. The memory target
(<= 4 MiB private dirty) is for the idle 8-GPU daemon; the 3,584-device
daemon holds its devices' data. Memory is read after \`sync\`, so the
freshly linked binary's page cache is not counted.

## 8 GPUs (\`dgx-a100\`), Allocate of 2 GPUs

$small

## 3,584 devices: 8 GPUs x 7 MIG 1g.10gb x 64 replicas (\`fake_nvml/machines/hgx-h100-mig7.yaml\`, MIG single, time-slicing 64), Allocate of 1 replica

$large

## GPU health: XID event to ListAndWatch

\`health_bench\` starts the plugin 25 times; each time it opens ListAndWatch
on the plugin's socket and appends a needs-reset XID (48) for every GPU in
turn to the fake NVML's control file, timing from the append to the client
holding the list that shows that GPU's devices unhealthy.

8 GPUs (\`dgx-a100\`):

$health_small

3,584 devices (as above):

$health_large

## GetPreferredAllocation

\`preferred_bench\` starts the plugin, reads its device list from
ListAndWatch, and times GetPreferredAllocation round trips over the
plugin's unix socket, gRPC included, one container request per call,
after 200 warm-up calls. "mixed" is a seeded mix that resembles a busy
node: each request's available set keeps every healthy device with one
probability drawn from 30-100%, asks for 1 to min(available, GPUs)
devices (1 to min(available, 16) with replicas), and a quarter of the
requests must include 1-2 of the available devices. "worst case" is the
hardest request for the exact chooser: every device available, half the
GPUs asked for, nothing that must be included. Every answer is checked
(right size, only available IDs, no repeats, all must-include IDs).
Targets: p99 <= 1 ms for 8 GPUs, <= 10 ms for 16.

8 GPUs (\`dgx1-v100\`, NVLink hybrid cube mesh):

$pref_8

8 GPUs x 16 time-slicing replicas:

$pref_8r

16 GPUs (\`dgx2-v100\`, NVSwitch):

$pref_16

16 GPUs x 16 time-slicing replicas:

$pref_16r
EOT
cat bench/RESULTS.md
