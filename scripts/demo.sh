#!/usr/bin/env bash
# The demo: builds the project, then runs gpu-device-plugin on the fake NVML
# (an 8 x A100 DGX) against the kubelet emulator, which registers it, shows
# its devices as the kubelet sees them, and allocates 2 GPUs for a pod; shows
# /healthz, a few metrics and the node labels; then turns on time-slicing
# through the config file, reloaded on SIGHUP. Last, the same daemon as the
# DRA driver gpu.nvidia.com against the API server emulator and the
# kubelet's DRA side (dpctl dra-kubelet): ResourceSlices, a claim prepared
# into a CDI spec, and a GPU lost from the bus turning into a device taint. Where podman can
# start containers (root, podman and runc), it ends with a workload
# container made from an Allocate answer, showing its GPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
echo "== building (log in build/demo-build.log)"
mkdir -p build
if ! { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release &&
       cmake --build build -j"$(nproc)" --target gpu-device-plugin dpctl fake-nvml fake_nvml
     } >build/demo-build.log 2>&1; then
  cat build/demo-build.log
  exit 1
fi

demo=$(mktemp -d /tmp/gdp-demo.XXXXXX)
plugin_pid=""
dra_pid=""
api_pid=""
cleanup() {
  for pid in $plugin_pid $dra_pid $api_pid; do
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
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
  --state-dir "$demo/state" --config-file "$demo/config.yaml" \
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
kill "$plugin_pid" && wait "$plugin_pid" || true
plugin_pid=""

echo
echo "== DRA: the same daemon as the DRA driver gpu.nvidia.com (--device-api=dra),"
echo "   with an API server emulator (tests/kube/apiserver.py) and dpctl dra-kubelet"
py=/usr/bin/python3  # Debian's, with python3-cryptography and python3-kubernetes
$py tests/kube/apiserver.py --dir "$demo/api" >"$demo/api.out" 2>"$demo/api.err" &
api_pid=$!
for _ in $(seq 100); do [ -s "$demo/api.out" ] && break; sleep 0.1; done
kc=(kubectl --kubeconfig "$demo/api/kubeconfig" --cache-dir "$demo/kube-cache")
echo '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "demo-node"}}' |
  "${kc[@]}" create --validate=false -f - >/dev/null
LD_LIBRARY_PATH=build/fake_nvml/lib FAKE_NVML_MACHINE="$machine" \
  FAKE_NVML_CONTROL="$demo/control" \
  build/src/gpu-device-plugin --device-api=dra --node-name demo-node \
  --state-dir "$demo/state-dra" \
  --kubeconfig "$demo/api/kubeconfig" \
  --kubelet-registration-dir "$demo/registry" \
  --kubelet-plugins-dir "$demo/plugins" --cdi-spec-dir "$demo/cdi" \
  --kubelet-socket "$demo/kp/kubelet.sock" \
  --sysfs-root "$demo/root/sys" --dev-root "$demo/root" \
  --health-probe-interval 1s 2>"$demo/dra.log" &
dra_pid=$!
slices() { "${kc[@]}" get --raw "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName=demo-node"; }
for _ in $(seq 100); do
  [ "$(slices | $py -c 'import json,sys; print(sum(len(s["spec"]["devices"]) for s in json.load(sys.stdin)["items"]))')" = 8 ] && break
  sleep 0.1
done
echo "== the node's ResourceSlice, as the scheduler sees it"
slices | $py -c '
import json, sys
for s in json.load(sys.stdin)["items"]:
  print("slice", s["metadata"]["name"], "pool", s["spec"]["pool"])
  for d in s["spec"]["devices"]:
    a = d["attributes"]
    print("  %s %s %s NUMA %s, NVLink domain %s, %s%s" % (
        d["name"], a["productName"]["string"], a["architecture"]["string"],
        a["resource.kubernetes.io/numaNode"]["int"],
        a["gpu.nvidia.com/nvlinkDomain"]["string"][:12] + "...",
        d["capacity"]["memory"]["value"],
        "".join("  taint %s=%s" % (t["key"], t.get("value", ""))
                for t in d.get("taints", []))))'

echo "== a ResourceClaim the scheduler allocated to gpu-2, prepared by the kubelet"
uid=$($py - "$demo/api/kubeconfig" <<'EOT'
import sys
sys.path.insert(0, "tests/kube")
import kube_client
c = kube_client.Client.from_kubeconfig(sys.argv[1])
claim = c.create("resourceclaims", {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "gpu-claim", "namespace": "demo"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com"}}]}}}, namespace="demo")
claim["status"] = {"allocation": {"devices": {"results": [{
    "request": "gpu", "driver": "gpu.nvidia.com", "pool": "demo-node",
    "device": "gpu-2"}]}}}
c.update("resourceclaims", claim, namespace="demo", status=True)
print(claim["metadata"]["uid"])
EOT
)
build/dpctl/dpctl dra-kubelet --registry-dir "$demo/registry" --no-health \
  --prepare "demo/gpu-claim/$uid" --exit-after-prepare
echo "== the claim's CDI spec: the container runtime injects /dev/nvidia2 from it"
$py -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["kind"], [(d["name"], [n["path"] for n in d["containerEdits"]["deviceNodes"]]) for d in s["devices"]])' \
  "$demo/cdi/k8s.gpu.nvidia.com-claim_$uid.json"

echo "== GPU 5 falls off the bus (XID 79, then NVML answers GPU_IS_LOST): its device is tainted in its slice"
echo "lose 5" >>"$demo/control"
for _ in $(seq 100); do slices | grep -q 'gpu.nvidia.com/gpu-lost' && break; sleep 0.1; done
slices | $py -c '
import json, sys
for s in json.load(sys.stdin)["items"]:
  for d in s["spec"]["devices"]:
    for t in d.get("taints", []):
      print("  %s: taint %s=%s (%s) since %s" % (d["name"], t["key"],
            t.get("value", ""), t["effect"], t.get("timeAdded", "?")))'
echo
echo "== the DRA daemon's log"
cat "$demo/dra.log"

echo
echo "== a GPU arrives in a container: podman and runc start a workload container"
echo "   from the plugin's Allocate answer, as the kubelet and a CRI runtime would"
kill "$dra_pid" && wait "$dra_pid" || true
dra_pid=""
echo "   (checking podman; the first time its Debian base image is made with debootstrap, about a minute)"
if [ ! -c "$demo/root/dev/nvidia0" ]; then
  echo "== no workload container: the fixture's /dev/nvidia* are not device nodes here (device nodes need root)"
elif ! /usr/bin/python3 tests/runtime/podman.py ready build/runtime-cache >"$demo/podman.txt" 2>&1; then
  echo "== no workload container: $(tail -1 "$demo/podman.txt")"
else
  LD_LIBRARY_PATH=build/fake_nvml/lib FAKE_NVML_MACHINE="$machine" \
    build/src/gpu-device-plugin --kubelet-socket "$demo/kp/kubelet.sock" \
    --state-dir "$demo/state-workload" \
    --sysfs-root "$demo/root/sys" --dev-root "$demo/root" --pass-device-specs \
    2>"$demo/plugin-workload.log" &
  plugin_pid=$!
  build/dpctl/dpctl kubelet --dir "$demo/kp" --json \
    --allocate nvidia.com/gpu=2:gpu-pod --exit-after-allocate >"$demo/answer.json"
  /usr/bin/python3 - "$demo/answer.json" <<'EOT'
import json, sys
for line in open(sys.argv[1]):
  e = json.loads(line) if line.startswith("{") else {}
  if e.get("event") == "allocate":
    r = e["response"]
    print("== the answer for gpu-pod: env %s, device specs %s" % (
        r["envs"], " ".join("%s->%s" % (d["host_path"], d["container_path"])
                            for d in r["devices"])))
EOT
  echo "== in the container: ls -l /dev/nvidia*; echo NVIDIA_VISIBLE_DEVICES"
  /usr/bin/python3 tests/runtime/containers.py "$demo/answer.json" -- \
    sh -c 'ls -l /dev/nvidia*; echo "NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"'
fi
