#!/usr/bin/python3
"""Renders every kustomization under deploy/ and checks what comes out.

  validate_manifests.py --deploy-dir deploy --kubectl kubectl [--kubectl K2]

For each directory holding a kustomization.yaml (deploy/base and every
overlay) and each kubectl given: `kubectl kustomize <dir>` must succeed, every
rendered object must pass the API schema and the API server's other checks
(k8s_schema.py), and the gpu-device-plugin DaemonSet must have what issue 6
asks for (toleration, priority class, host mounts, securityContext, probes,
requests) plus what its overlay adds. With two kubectls the renderings must
be the same objects (generated names' hash suffixes aside). The YAML files
under deploy/examples/ are checked as they are. Exits 1 naming the overlay,
object and field of every problem.
"""

import argparse
import os
import posixpath
import re
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_schema  # pylint: disable=wrong-import-position

PLUGIN = "gpu-device-plugin"
NAMESPACE = "kube-system"
METRICS_PORT = 9445

# What each overlay must add to the base; an overlay not listed here gets only
# the base's checks.
OVERLAYS = {
    "base": {},
    "overlays/cpu-manager": {"privileged": True, "pass_device_specs": True},
    "overlays/time-slicing": {"config_file": True},
    "overlays/labels": {"labels": True},
}

# Host paths the plugin needs -> (the setting naming the container path, its
# default, whether it must be writable).
DEVICE_PLUGINS_DIR = "/var/lib/kubelet/device-plugins"
CDI_DIR = "/var/run/cdi"
NFD_DIR = "/etc/kubernetes/node-feature-discovery/features.d"
DMI_PRODUCT_NAME = "/sys/class/dmi/id/product_name"

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


def setting(container, flag, env):
  """The value a flag or its environment variable gives; None when unset.

  A flag beats its variable, as in the plugin. A bare boolean flag is "true".
  """
  args = list(container.get("command") or []) + list(
      container.get("args") or [])
  for i, a in enumerate(args):
    if a == flag:
      nxt = args[i + 1] if i + 1 < len(args) else None
      return nxt if nxt is not None and not nxt.startswith("-") else "true"
    if a.startswith(flag + "="):
      return a[len(flag) + 1:]
  for e in container.get("env") or []:
    if e.get("name") == env:
      return e.get("value")
  return None


def is_true(value):
  return value is not None and value.lower() in ("true", "1", "yes")


def mount_of(container, volumes, path):
  """(mount, volume) whose mountPath holds path (the deepest); (None, None)."""
  best = (None, None)
  for m in container.get("volumeMounts") or []:
    mp = m["mountPath"].rstrip("/") or "/"
    if path == mp or path.startswith(mp + "/"):
      if best[0] is None or len(mp) > len(best[0]["mountPath"]):
        best = (m, volumes.get(m["name"]))
  return best


def check_host_mount(container, volumes, host_path, ctr_path, writable,
                     where, problems):
  m, v = mount_of(container, volumes, ctr_path)
  if m is None or v is None or "hostPath" not in v:
    problems.append(f"{where}.volumeMounts: nothing mounts the host's "
                    f"{host_path} at {ctr_path}")
    return None
  sub = posixpath.relpath(ctr_path, m["mountPath"])
  got = posixpath.normpath(posixpath.join(v["hostPath"]["path"], sub))
  if got != posixpath.normpath(host_path):
    problems.append(f"{where}.volumeMounts[{m['name']}]: {ctr_path} is the "
                    f"host's {got}, expected {host_path}")
  if writable and m.get("readOnly"):
    problems.append(f"{where}.volumeMounts[{m['name']}]: {ctr_path} must be "
                    "writable")
  return m


def check_plugin(ds, rendered, expect, problems):
  """Issue 6's requirements for the DaemonSet in one rendering."""
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
    return
  c = containers[0]
  where = f"{path}.containers[{spec['containers'].index(c)}]"
  volumes = {v["name"]: v for v in spec.get("volumes") or []}

  # Host directories.
  check_host_mount(c, volumes, DEVICE_PLUGINS_DIR, DEVICE_PLUGINS_DIR, True,
                   where, problems)
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
  config = setting(c, "--config-file", "CONFIG_FILE")
  if bool(config) != bool(expect.get("config_file")):
    problems.append(f"{where}: --config-file is {config!r}, expected "
                    f"{'a file' if expect.get('config_file') else 'none'}")
  if config:
    check_config_file(c, volumes, config, rendered, ns, where, problems)


def check_config_file(c, volumes, config, rendered, ns, where, problems):
  """--config-file must come from a rendered ConfigMap holding a v1 config."""
  m, v = mount_of(c, volumes, config)
  if m is None or v is None or "configMap" not in v:
    problems.append(f"{where}.volumeMounts: {config} is not in a mounted "
                    "ConfigMap")
    return
  key = posixpath.relpath(config, m["mountPath"])
  if m.get("subPath"):
    key = m["subPath"]
  name = v["configMap"]["name"]
  cms = [o for o in rendered if o.get("kind") == "ConfigMap" and
         o["metadata"]["name"] == name and
         o["metadata"].get("namespace") == ns]
  if not cms:
    problems.append(f"spec.template.spec.volumes[{v['name']}]: ConfigMap "
                    f"{ns}/{name} is not in the rendered output")
    return
  text = (cms[0].get("data") or {}).get(key)
  if text is None:
    problems.append(f"ConfigMap {ns}/{name}: no key {key!r} (the plugin "
                    f"reads {config})")
    return
  try:
    cfg = yaml.safe_load(text)
  except yaml.YAMLError as e:
    problems.append(f"ConfigMap {ns}/{name}.data.{key}: not YAML: {e}")
    return
  if not isinstance(cfg, dict) or cfg.get("version", "v1") != "v1":
    problems.append(f"ConfigMap {ns}/{name}.data.{key}: version must be v1")
    return
  ts = ((cfg.get("sharing") or {}).get("timeSlicing") or {})
  resources = ts.get("resources") or []
  if not resources:
    problems.append(f"ConfigMap {ns}/{name}.data.{key}: "
                    "sharing.timeSlicing.resources is empty")
  for i, r in enumerate(resources):
    reps = r.get("replicas") if isinstance(r, dict) else None
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 2:
      problems.append(f"ConfigMap {ns}/{name}.data.{key}: sharing."
                      f"timeSlicing.resources[{i}].replicas must be an "
                      f"integer >= 2, got {reps!r}")


def check_rendering(label, objects):
  """Problems of one rendering, each prefixed with label and the object."""
  problems = []
  plugins = []
  for obj in objects:
    for p in k8s_schema.check_object(obj):
      problems.append(f"{label}: {k8s_schema.describe(obj)}: {p}")
    if obj.get("kind") == "DaemonSet" and \
        obj.get("metadata", {}).get("name") == PLUGIN:
      plugins.append(obj)
  if len(plugins) != 1:
    problems.append(f"{label}: expected one DaemonSet {PLUGIN}, found "
                    f"{len(plugins)}")
    return problems
  overlay = label.split(" ")[0]
  found = []
  try:
    check_plugin(plugins[0], objects, OVERLAYS.get(overlay, {}), found)
  except (KeyError, TypeError, AttributeError) as e:
    found.append(f"malformed object ({type(e).__name__}: {e})")
  desc = k8s_schema.describe(plugins[0])
  problems += [f"{label}: {desc}: {p}" for p in found]
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
      for p in k8s_schema.check_object(obj):
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
