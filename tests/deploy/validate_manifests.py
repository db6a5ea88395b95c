#!/usr/bin/python3
"""Renders every kustomization under deploy/ and checks what comes out.

  validate_manifests.py --deploy-dir deploy --kubectl kubectl [--kubectl K2]

For each directory holding a kustomization.yaml (deploy/base and every
overlay) and each kubectl given: `kubectl kustomize <dir>` must succeed, every
rendered object must pass the API schema and the API server's other checks
(k8s_schema.py; dra_kinds.py for DeviceClasses and ValidatingAdmissionPolicies,
which python3-kubernetes lacks), and the gpu-device-plugin DaemonSet must have
what issue 6 asks for (toleration, priority class, host mounts,
securityContext, probes, requests) plus what its overlay adds (the DRA
overlays: dra_wiring.py). With two kubectls the renderings must be the same
objects (generated names' hash suffixes aside). The YAML files under
deploy/examples/ are checked as they are. Exits 1 naming the overlay, object
and field of every problem.
"""

import argparse
import os
import posixpath
import re
import subprocess
import sys

import yaml

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import config_checks
import dra_kinds
import dra_wiring
import k8s_schema
from manifest_util import check_host_mount, is_true, mount_of, setting
# pylint: enable=wrong-import-position

PLUGIN = "gpu-device-plugin"
NAMESPACE = "kube-system"
METRICS_PORT = 9445

# What each overlay must add to the base; an overlay not listed here gets only
# the base's checks.
# device_api: the device API the plugin must run with (default
# device-plugin); config_file: the config section the overlay exists for.
OVERLAYS = {
    "base": {},
    "overlays/cpu-manager": {"privileged": True, "pass_device_specs": True},
    "overlays/time-slicing": {"config_file": "time-slicing"},
    "overlays/labels": {"labels": True},
    # The labels as NodeFeature objects: the API server through its own
    # ServiceAccount (nodefeatures, nodes get).
    "overlays/labels-nodefeature": {"labels": True},
    "overlays/dra": {"device_api": "dra"},
    "overlays/dra-both": {"device_api": "both", "config_file": "dra"},
}

# Host paths the plugin needs -> (the setting naming the container path, its
# default, whether it must be writable).
DEVICE_PLUGINS_DIR = "/var/lib/kubelet/device-plugins"
CDI_DIR = "/var/run/cdi"
NFD_DIR = "/etc/kubernetes/node-feature-discovery/features.d"
DMI_PRODUCT_NAME = "/sys/class/dmi/id/product_name"
STATE_DIR = "/var/lib/gpu-device-plugin"

# kustomize v5 warns about bases: and patchesStrategicMerge:, the only forms
# kustomize v2.0.3 (kubectl 1.20) understands; those warnings are expected.
_EXPECTED_STDERR = re.compile(r"^# Warning: '(bases|patchesStrategicMerge|"
                              r"patchesJson6902)' is deprecated")


def render(kubectl, directory):
  """(objects, problems) of `kubectl kustomize directory`."""
  try:
    proc = subprocess.run([kubectl, "kustomize", directory],
                          capture_output=True, text=True, check=False,
                          timeout=120)
  except OSError as e:
    return [], [f"cannot run {kubectl}: {e} (scripts/deps.sh installs "
                "Debian's kubernetes-client)"]
  problems = []
  if proc.returncode != 0:
    return [], [f"{kubectl} kustomize failed (exit {proc.returncode}): "
                f"{proc.stderr.strip()}"]
  for line in proc.stderr.splitlines():
    if line.strip() and not _EXPECTED_STDERR.match(line):
      problems.append(f"{kubectl} kustomize printed: {line}")
  try:
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d is not None]
  except yaml.YAMLError as e:
    return [], [f"{kubectl} kustomize gave unparsable YAML: {e}"]
  return docs, problems


def check_plugin(ds, rendered, expect, problems):
  """Issue 6's requirements for the DaemonSet in one rendering.

  Returns (the plugin's container, its device API), or None when the
  DaemonSet has no container named gpu-device-plugin.
  """
  ns = ds["metadata"].get("namespace")
  if ns != NAMESPACE:
    problems.append(f"metadata.namespace: {ns!r}, expected {NAMESPACE}")
  strategy = (ds["spec"].get("updateStrategy") or {}).get("type")
  if strategy != "RollingUpdate":
    problems.append(f"spec.updateStrategy.type: {strategy!r}, expected "
                    "RollingUpdate")
  spec = ds["spec"]["template"]["spec"]
  path = "spec.template.spec"
  if not any(t.get("key") == "nvidia.com/gpu" and
             t.get("operator") == "Exists" and
             t.get("effect") == "NoSchedule"
             for t in spec.get("tolerations") or []):
    problems.append(f"{path}.tolerations: no toleration for nvidia.com/gpu "
                    "(operator Exists, effect NoSchedule)")
  if spec.get("priorityClassName") != "system-node-critical":
    problems.append(f"{path}.priorityClassName: "
                    f"{spec.get('priorityClassName')!r}, expected "
                    "system-node-critical")
  containers = [c for c in spec["containers"] if c["name"] == PLUGIN]
  if len(containers) != 1:
    problems.append(f"{path}.containers: no container named {PLUGIN}")
    return None
  c = containers[0]
  where = f"{path}.containers[{spec['containers'].index(c)}]"
  volumes = {v["name"]: v for v in spec.get("volumes") or []}

  # The config file, and the device API (which it may set).
  config = config_checks.config_path(c)
  if bool(config) != bool(expect.get("config_file")):
    problems.append(f"{where}: --config-file is {config!r}, expected "
                    f"{'a file' if expect.get('config_file') else 'none'}")
  cfg = config_checks.load_config(c, volumes, rendered, ns, where, problems)
  if cfg is not None:
    config_checks.check_config(cfg, expect.get("config_file"), problems)
  api = config_checks.device_api(c, cfg, where, problems)
  if api != expect.get("device_api", "device-plugin"):
    problems.append(f"{where}: --device-api is {api!r}, expected "
                    f"{expect.get('device_api', 'device-plugin')!r}")

  # Host directories.
  if api == "dra":
    m, v = mount_of(c, volumes, DEVICE_PLUGINS_DIR)
    if m is not None and v is not None and "hostPath" in v:
      problems.append(f"{where}.volumeMounts[{m['name']}]: mounts the "
                      "kubelet's device-plugins directory, which "
                      "--device-api=dra never uses")
  else:
    check_host_mount(c, volumes, DEVICE_PLUGINS_DIR, DEVICE_PLUGINS_DIR,
                     True, where, problems)
  if api in ("dra", "both"):
    dra_wiring.check_pod(ds, c, where, volumes, api, problems)
  cdi = setting(c, "--cdi-spec-dir", "CDI_SPEC_DIR") or CDI_DIR
  check_host_mount(c, volumes, CDI_DIR, cdi, True, where, problems)
  driver_root = setting(c, "--driver-root", "NVIDIA_DRIVER_ROOT") or "/"
  ctr_root = setting(c, "--driver-root-ctr-path", "DRIVER_ROOT_CTR_PATH") or \
      "/driver-root"
  m = check_host_mount(c, volumes, driver_root, ctr_root, False, where,
                       problems)
  if m is not None and not m.get("readOnly"):
    problems.append(f"{where}.volumeMounts[{m['name']}]: the driver root "
                    "should be mounted readOnly")
  output = setting(c, "--output-file", "GFD_OUTPUT_FILE") or \
      posixpath.join(NFD_DIR, "gfd")
  check_host_mount(c, volumes, NFD_DIR, posixpath.dirname(output), True,
                   where, problems)
  # The health state file outlives the container only on the host (an
  # empty --state-dir keeps none).
  state = setting(c, "--state-dir", "STATE_DIR")
  state = STATE_DIR if state is None else state
  if state:
    check_host_mount(c, volumes, STATE_DIR, state, True, where, problems)

  # Security.
  sc = c.get("securityContext") or {}
  if expect.get("privileged"):
    if sc.get("privileged") is not True:
      problems.append(f"{where}.securityContext.privileged: expected true "
                      "in this overlay")
  else:
    if sc.get("privileged"):
      problems.append(f"{where}.securityContext.privileged: only the "
                      "cpu-manager overlay runs privileged")
    if sc.get("allowPrivilegeEscalation") is not False:
      problems.append(f"{where}.securityContext.allowPrivilegeEscalation: "
                      "expected false")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
      problems.append(f"{where}.securityContext.capabilities.drop: expected "
                      "[ALL]")
  # Every overlay: the plugin writes only to its host mounts.
  if sc.get("readOnlyRootFilesystem") is not True:
    problems.append(f"{where}.securityContext.readOnlyRootFilesystem: "
                    "expected true")
  seccomp = (sc.get("seccompProfile") or {}).get("type")
  if not expect.get("privileged") and seccomp != "RuntimeDefault":
    problems.append(f"{where}.securityContext.seccompProfile.type: expected "
                    f"RuntimeDefault, got {seccomp!r}")

  # Endpoints and probes.
  addr = setting(c, "--metrics-address", "METRICS_ADDRESS")
  if addr is None or not addr.endswith(f":{METRICS_PORT}"):
    problems.append(f"{where}: --metrics-address is {addr!r}, expected "
                    f":{METRICS_PORT}")
  if not any(p["containerPort"] == METRICS_PORT for p in c.get("ports") or []):
    problems.append(f"{where}.ports: no containerPort {METRICS_PORT}")
  for probe, endpoint in (("livenessProbe", "/healthz"),
                          ("readinessProbe", "/readyz")):
    get = (c.get(probe) or {}).get("httpGet")
    if not get:
      problems.append(f"{where}.{probe}: expected an httpGet on {endpoint}")
      continue
    if get.get("path") != endpoint:
      problems.append(f"{where}.{probe}.httpGet.path: {get.get('path')!r}, "
                      f"expected {endpoint}")
    if k8s_schema.port_number(c, get.get("port")) != METRICS_PORT:
      problems.append(f"{where}.{probe}.httpGet.port: {get.get('port')!r} "
                      f"is not {METRICS_PORT}")

  # Resources and environment.
  res = c.get("resources") or {}
  for k in ("cpu", "memory"):
    if k not in (res.get("requests") or {}):
      problems.append(f"{where}.resources.requests.{k}: missing")
  if "memory" not in (res.get("limits") or {}):
    problems.append(f"{where}.resources.limits.memory: missing")
  if not c.get("image"):
    problems.append(f"{where}.image: missing")
  env = {e["name"]: e.get("value") for e in c.get("env") or []}
  if env.get("NVIDIA_VISIBLE_DEVICES") != "all":
    problems.append(f"{where}.env: NVIDIA_VISIBLE_DEVICES is "
                    f"{env.get('NVIDIA_VISIBLE_DEVICES')!r}, expected all")
  if "utility" not in (env.get("NVIDIA_DRIVER_CAPABILITIES") or "").split(","):
    problems.append(f"{where}.env: NVIDIA_DRIVER_CAPABILITIES must include "
                    "utility (NVML)")

  # What the overlays add.
  pass_specs = is_true(setting(c, "--pass-device-specs", "PASS_DEVICE_SPECS"))
  if pass_specs != bool(expect.get("pass_device_specs")):
    problems.append(f"{where}: --pass-device-specs is {pass_specs}, expected "
                    f"{bool(expect.get('pass_device_specs'))}")
  labels = is_true(setting(c, "--labels", "GDP_LABELS"))
  if labels != bool(expect.get("labels")):
    problems.append(f"{where}: --labels is {labels}, expected "
                    f"{bool(expect.get('labels'))}")
  if labels:
    machine = setting(c, "--machine-type-file", "GFD_MACHINE_TYPE_FILE") or \
        DMI_PRODUCT_NAME
    check_host_mount(c, volumes, DMI_PRODUCT_NAME, machine, False, where,
                     problems)
  return c, api


def check_rendering(label, objects, expect=None):
  """Problems of one rendering, each prefixed with label and the object.

  expect: what the overlay adds (as in OVERLAYS); default: OVERLAYS' entry
  for the overlay named by label's first word.
  """
  problems = []
  plugins = []
  for obj in objects:
    for p in dra_kinds.check_object(obj):
      problems.append(f"{label}: {k8s_schema.describe(obj)}: {p}")
    if obj.get("kind") == "DaemonSet" and \
        obj.get("metadata", {}).get("name") == PLUGIN:
      plugins.append(obj)
  if len(plugins) != 1:
    problems.append(f"{label}: expected one DaemonSet {PLUGIN}, found "
                    f"{len(plugins)}")
    return problems
  if expect is None:
    expect = OVERLAYS.get(label.split(" ")[0], {})
  found, facts = [], None
  try:
    facts = check_plugin(plugins[0], objects, expect, found)
  except (KeyError, TypeError, AttributeError) as e:
    found.append(f"malformed object ({type(e).__name__}: {e})")
  desc = k8s_schema.describe(plugins[0])
  problems += [f"{label}: {desc}: {p}" for p in found]
  if facts is not None and facts[1] in ("dra", "both"):
    try:
      around = dra_wiring.check_cluster(plugins[0], facts[0], objects,
                                        facts[1])
    except (KeyError, TypeError, AttributeError) as e:
      around = [f"malformed object ({type(e).__name__}: {e})"]
    problems += [f"{label}: {p}" for p in around]
  return problems


def normalized(objects):
  """objects with kustomize's generated-name hash suffixes removed."""
  text = yaml.safe_dump(objects, sort_keys=True)
  for o in objects:
    if o.get("kind") in ("ConfigMap", "Secret"):
      name = o["metadata"]["name"]
      base = re.sub(r"-[a-z0-9]{10}$", "", name)
      text = re.sub(rf"\b{re.escape(name)}\b", base, text)
  return yaml.safe_load(text)


def kustomizations(deploy_dir):
  found = []
  for root, _, files in os.walk(deploy_dir):
    if "kustomization.yaml" in files:
      found.append(os.path.relpath(root, deploy_dir))
  return sorted(found)


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--deploy-dir", required=True)
  ap.add_argument("--kubectl", action="append", required=True,
                  help="a kubectl to render with; repeat to compare two")
  args = ap.parse_args()

  problems = []
  dirs = kustomizations(args.deploy_dir)
  for want in OVERLAYS:
    if want not in dirs:
      problems.append(f"{want}: no kustomization.yaml under "
                      f"{args.deploy_dir}")
  for d in dirs:
    renderings = []
    for kubectl in args.kubectl:
      label = f"{d} (rendered by {kubectl})"
      objects, found = render(kubectl, os.path.join(args.deploy_dir, d))
      problems += [f"{label}: {p}" for p in found]
      if objects:
        problems += check_rendering(label, objects)
        renderings.append((kubectl, objects))
      print(f"{label}: {len(objects)} object(s)")
    for kubectl, objects in renderings[1:]:
      if normalized(objects) != normalized(renderings[0][1]):
        problems.append(f"{d}: {kubectl} and {renderings[0][0]} render "
                        "different objects")

  examples = os.path.join(args.deploy_dir, "examples")
  for name in sorted(os.listdir(examples)) if os.path.isdir(examples) else []:
    if not name.endswith((".yaml", ".yml")):
      continue
    path = os.path.join(examples, name)
    with open(path, encoding="utf-8") as f:
      docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for obj in docs:
      for p in dra_kinds.check_object(obj):
        problems.append(f"examples/{name}: {k8s_schema.describe(obj)}: {p}")
    print(f"examples/{name}: {len(docs)} object(s)")
    gpus = [c for o in docs if o.get("kind") == "Pod"
            for c in o["spec"]["containers"]
            if ((c.get("resources") or {}).get("limits") or {}).get(
                "nvidia.com/gpu")]
    if not gpus:
      problems.append(f"examples/{name}: no container asks for "
                      "nvidia.com/gpu in its limits")

  for p in problems:
    print(f"FAIL {p}", file=sys.stderr)
  if problems:
    print(f"{len(problems)} problem(s)", file=sys.stderr)
    return 1
  print("all rendered manifests valid")
  return 0


if __name__ == "__main__":
  sys.exit(main())
