#!/usr/bin/env bash
# The demo: builds the project, then runs gpu-device-plugin on the fake NVML
# (an 8 x A100 DGX) against the kubelet emulator, which registers it, shows
# its devices as the kubelet sees them, and allocates 2 GPUs for a pod; shows
# /healthz, a few metrics and the node labels; then turns on time-slicing
# through the config file, reloaded on SIGHUP.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
echo "== building (log in build/demo-build.log)"
mkdir -p build
if ! { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build build -j"$(nproc)" --target gpu-device-plugin dpctl fake-nvml fake_nvml
     } >build/demo-build.log 2>&1; then
  cat build/demo-build.log
  exit 1
fi

demo=$(mktemp -d /tmp/gdp-demo.XXXXXX)
plugin_pid=""
cleanup() {
  [ -n "$plugin_pid" ] && kill "$plugin_pid" 2>/dev/null && wait "$plugin_pid" 2>/dev/null
  rm -rf "$demo"
}
trap cleanup EXIT
machine=fake_nvml/machines/dgx-a100.yaml
build/fake_nvml/fake-nvml rootfs --machine "$machine" --out "$demo/root"
mkdir -p "$demo/kp"

echo "version: v1" >"$demo/config.yaml"

echo "DGX A100" >"$demo/product_name"  # the DMI product name on a real node
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

echo "== gpu-device-plugin on the fake $(basename "$machine" .yaml)"
LD_LIBRARY_PATH=build/fake_nvml/lib FAKE_NVML_MACHINE="$machine" \
  build/src/gpu-device-plugin --kubelet-socket "$demo/kp/kubelet.sock" \
  --config-file "$demo/config.yaml" \
  --sysfs-root "$demo/root/sys" --dev-root "$demo/root" --pass-device-specs \
  --metrics-address "127.0.0.1:$port" \
  --labels --output-file "$demo/gfd" --machine-type-file "$demo/product_name" \
  2>"$demo/plugin.log" &
plugin_pid=$!

echo "== dpctl kubelet: registration, the devices as the kubelet sees them, one pod asking for 2 GPUs"
build/dpctl/dpctl kubelet --dir "$demo/kp" \
  --allocate nvidia.com/gpu=2:demo-pod --exit-after-allocate

echo
echo "== dpctl list: the plugin's socket, queried directly"
build/dpctl/dpctl list --socket "$demo/kp/nvidia-gpu.sock"

echo
echo "== GET /healthz (fails now: the kubelet emulator exited after its pod) and a few of /metrics"
curl -sS -w '(HTTP %{http_code})\n' "http://127.0.0.1:$port/healthz"
curl -sS "http://127.0.0.1:$port/metrics" |
  grep -E '^gpu_device_plugin_(devices|allocations_total|request_duration_seconds_count)\{'

echo
echo "== node labels (--labels), as Node Feature Discovery reads them from $demo/gfd"
for _ in $(seq 50); do [ -s "$demo/gfd" ] && break; sleep 0.1; done
grep -E 'gpu\.(product|count|memory|family|replicas|machine)=' "$demo/gfd"

echo
echo "== time-slicing: 4 replicas per GPU in the config file, then SIGHUP"
cat >"$demo/config.yaml" <<'EOT'
version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
EOT
kill -HUP "$plugin_pid"
for _ in $(seq 50); do
  grep -q "Config reloaded" "$demo/plugin.log" && break
  sleep 0.1
done
for _ in $(seq 50); do grep -q 'gpu.replicas=4' "$demo/gfd" && break; sleep 0.1; done
echo "== the labels follow: $(grep -E 'gpu\.(product|replicas)=' "$demo/gfd" | tr '\n' ' ')"
echo "== dpctl kubelet (restarted): 32 replicas; a pod asking for 4 gets 4 different GPUs"
build/dpctl/dpctl kubelet --dir "$demo/kp" \
  --allocate nvidia.com/gpu=4:shared-pod --exit-after-allocate

echo
echo "== the plugin's log"
cat "$demo/plugin.log"
