"""The plugin's config file as a rendered overlay ships it, checked offline.

  cfg = load_config(container, volumes, rendered, namespace, where, problems)
  api = device_api(container, cfg, where, problems)
  check_config(cfg, what, problems)

load_config follows --config-file (CONFIG_FILE) to the ConfigMap mounted
there and parses the key the plugin reads (a Config: data, the parsed
file, and label, "ConfigMap <ns>/<name>.data.<key>" for messages); device_api gives the device API
the plugin will run with (flag or variable, else the file's
flags.deviceAPI, else device-plugin); check_config checks the sections an
overlay relies on: time-slicing replicas, dra.devices references (the
formats config/names.cc accepts). Problems are appended as strings naming
the ConfigMap or the DaemonSet's field.
"""

import collections
import posixpath
import re

import yaml

from manifest_util import mount_of, setting

DEVICE_APIS = ("device-plugin", "dra", "both")

Config = collections.namedtuple("Config", "data label")

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-" \
        r"[0-9a-fA-F]{12}"
_DEVICE_REF = re.compile(
    rf"^([0-9]+|[0-9]+:[0-9]+|GPU-{_UUID}|MIG-{_UUID}|"
    rf"MIG-GPU-{_UUID}/[0-9]+/[0-9]+)$")


def config_path(container):
  """The config file the plugin reads; None when it reads none."""
  return setting(container, "--config-file", "CONFIG_FILE")


def load_config(c, volumes, rendered, ns, where, problems):
  """The Config the container reads; None without a config file or when it
  cannot be followed (a problem then says why)."""
  config = config_path(c)
  if not config:
    return None
  m, v = mount_of(c, volumes, config)
  if m is None or v is None or "configMap" not in v:
    problems.append(f"{where}.volumeMounts: {config} is not in a mounted "
                    "ConfigMap")
    return None
  key = posixpath.relpath(config, m["mountPath"])
  if m.get("subPath"):
    key = m["subPath"]
  # With items, only the listed keys appear, each at its own path.
  items = v["configMap"].get("items")
  if items:
    keys = [i["key"] for i in items if i.get("path") == key]
    if not keys:
      problems.append(f"spec.template.spec.volumes[{v['name']}]: no item of "
                      f"the ConfigMap is at {key} (the plugin reads "
                      f"{config})")
      return None
    key = keys[0]
  name = v["configMap"]["name"]
  cms = [o for o in rendered if o.get("kind") == "ConfigMap" and
         o["metadata"]["name"] == name and
         o["metadata"].get("namespace") == ns]
  if not cms:
    problems.append(f"spec.template.spec.volumes[{v['name']}]: ConfigMap "
                    f"{ns}/{name} is not in the rendered output")
    return None
  label = f"ConfigMap {ns}/{name}.data.{key}"
  text = (cms[0].get("data") or {}).get(key)
  if text is None:
    problems.append(f"ConfigMap {ns}/{name}: no key {key!r} (the plugin "
                    f"reads {config})")
    return None
  try:
    cfg = yaml.safe_load(text)
  except yaml.YAMLError as e:
    problems.append(f"{label}: not YAML: {e}")
    return None
  if not isinstance(cfg, dict) or cfg.get("version", "v1") != "v1":
    problems.append(f"{label}: version must be v1")
    return None
  return Config(cfg, label)


def device_api(c, cfg, where, problems):
  """The device API the plugin runs with; a problem if it is not one."""
  api = setting(c, "--device-api", "DEVICE_API")
  source = f"{where}: --device-api"
  if api is None and cfg is not None:
    api = (cfg.data.get("flags") or {}).get("deviceAPI")
    source = f"{cfg.label}: flags.deviceAPI"
  if api is None:
    return "device-plugin"
  if api not in DEVICE_APIS:
    problems.append(f"{source}: {api!r} is not one of {list(DEVICE_APIS)}")
  return api


def check_config(cfg, what, problems):
  """Checks the config's time-slicing and dra sections.

  what: the section the overlay exists for ("time-slicing" or "dra"),
  which must then be present.
  """
  label = cfg.label
  ts = ((cfg.data.get("sharing") or {}).get("timeSlicing") or {})
  resources = ts.get("resources") or []
  if what == "time-slicing" and not resources:
    problems.append(f"{label}: sharing.timeSlicing.resources is empty")
  for i, r in enumerate(resources):
    reps = r.get("replicas") if isinstance(r, dict) else None
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 2:
      problems.append(f"{label}: sharing.timeSlicing.resources[{i}].replicas "
                      f"must be an integer >= 2, got {reps!r}")
  dra = cfg.data.get("dra")
  if dra is None:
    if what == "dra":
      problems.append(f"{label}: dra.devices: missing (which GPUs DRA "
                      "serves)")
    return
  if not isinstance(dra, dict) or "devices" not in dra:
    problems.append(f"{label}: dra.devices: missing (which GPUs DRA serves)")
    return
  check_dra_devices(dra["devices"], f"{label}: dra.devices", problems)


def check_dra_devices(devices, label, problems):
  """dra.devices: `all`, a count >= 1, or a list of device references."""
  if devices == "all":
    return
  if isinstance(devices, int) and not isinstance(devices, bool):
    if devices < 1:
      problems.append(f"{label}: a number of devices must be at least 1, "
                      f"got {devices}")
    return
  if not isinstance(devices, list) or not devices:
    problems.append(f"{label}: must be 'all', a number of devices or a "
                    f"non-empty list of devices, got {devices!r}")
    return
  seen = {}
  for i, ref in enumerate(devices):
    text = str(ref) if isinstance(ref, int) and not isinstance(
        ref, bool) else ref
    if not isinstance(text, str) or not _DEVICE_REF.match(text):
      problems.append(f"{label}[{i}]: {ref!r} is not a GPU index (\"0\"), "
                      "MIG index (\"0:1\", quoted), GPU UUID or MIG UUID")
    elif text in seen:
      problems.append(f"{label}[{i}]: {text!r} is already listed at "
                      f"[{seen[text]}]")
    else:
      seen[text] = i
