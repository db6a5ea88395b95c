#!/usr/bin/env bash
# Builds Release and runs the benchmarks, writing bench/RESULTS.md.
# Usage: bench/run.sh [--calls N] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-bench -j"$(nproc)" --target plugin_bench health_bench preferred_bench dra_bench idle_bench gpu-device-plugin fake_nvml fake-nvml
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
dra=$(build-bench/bench/dra_bench --plugin build-bench/src/gpu-device-plugin \
  --fake-lib build-bench/fake_nvml/lib --rootfs-tool build-bench/fake_nvml/fake-nvml \
  --machine fake_nvml/machines/dgx-a100.yaml --apiserver tests/kube/apiserver.py)
idle=$(build-bench/bench/idle_bench --plugin build-bench/src/gpu-device-plugin \
  --fake-lib build-bench/fake_nvml/lib --rootfs-tool build-bench/fake_nvml/fake-nvml \
  --machine fake_nvml/machines/dgx-a100.yaml)
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

## DRA (\`--device-api=dra\`), 8 GPUs (\`dgx-a100\`)

\`dra_bench\` runs the plugin with \`--device-api=dra\` against the API
server emulator (\`tests/kube/apiserver.py\`: HTTPS, validating every
write) and does the kubelet's side in-process: GetInfo and
NotifyRegistrationStatus on the registration socket, then
NodePrepareResources on dra.sock. The node's ResourceSlices are followed
with a watch, not polled; each time ends when the watch event arrives.
Measured $(date -u +%Y-%m-%d); the files are on $(df -T /tmp | awk 'NR == 2 {print $2}') under /tmp.

Prepare of a fresh claim makes the plugin read it from the API server:
500 claims, each allocated one GPU, are created up front; each is
prepared once (timed) and unprepared right after (not timed), after 20
warm-up claims. Its floors are timed in the same run, in 16 alternating
rounds after 200 warm-up calls each (each block of one kind starts with
2 calls not timed: the first call after a pause is slower, the echo's
too): the testing kit's DRA plugin (testing/fake_dra_plugin.h) answering
NodePrepareResources with a canned device, in its own process (the same
kind of unix socket, the same callback API, the answer made on a worker
thread as the plugin does); a
bare HTTPS GET of a claim from the emulator with the project's kube
client (keep-alive, like the plugin's); and the two atomic file writes a
fresh Prepare makes (CDI spec and checkpoint, each written to a
temporary file, fsynced and renamed, then the directory fsynced), of the
same sizes, in the same file system. A claim already prepared is
answered from the checkpoint.

Start: the slices, checkpoint and CDI specs are removed, then the time
from spawning the plugin, 10 starts. XID: \`xid <gpu> 32\` (recoverable)
appended to the fake NVML's control file, until the watch sees the
device's \`gpu.nvidia.com/xid\` taint, with \`--health-quiet-period 1s
--health-probe-interval 200ms\`. The plugin holds a GPU that fails again
twice as long each time, so the 60 events come from 4 plugin starts,
each sending one to every GPU but gpu-0 (which first gets an untimed
one, resent until its taint shows, so the health monitor is known to be
watching), then one to every GPU again once its taint went. Republish:
DeleteCollection of the node's slices, as the kubelet does when it
starts, until the watch sees the 8 devices again; 5 rounds, 100 ms
apart (more in a row are rate limited as a fight over the pool:
docs/dra.md).

$dra

## Idle cost

\`idle_bench\` starts the plugin on 8 GPUs (\`dgx-a100\`) with metrics
off, waits until it registered with the in-process kubelet and sent its
list on an open ListAndWatch stream, lets it settle 2 s, then reads its
CPU time (the process's CPU clock, and utime+stime from
/proc/<pid>/stat in 10 ms ticks) and its threads' context switches
(/proc/<pid>/task/*/status) at both ends of a 60 s window. The reference
is a bare gRPC server in its own process (callback API, default
ServerBuilder, the same kind of unix socket) holding one ListAndWatch
stream open after sending a list of as many devices, measured over the
same window. Then SIGTERM to the daemon, timed until it exits.

$idle
EOT
cat bench/RESULTS.md
