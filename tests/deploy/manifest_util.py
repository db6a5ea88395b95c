"""What a rendered container is told and given, for the manifest checks.

setting() reads a plugin setting from a container's args and environment as
the plugin does; mount_of() and check_host_mount() follow a container path
to the host path behind it. Pure functions of parsed YAML (dicts), shared by
validate_manifests.py, config_checks.py and dra_wiring.py.
"""

import posixpath


def _names(value):
  return (value,) if isinstance(value, str) else tuple(value)


def setting(container, flags, envs):
  """The value flags or their environment variables give; None when unset.

  flags and envs are a name or a tuple of names (aliases, in the plugin's
  order of precedence). A flag beats every variable, as in the plugin. A
  bare boolean flag is "true". A variable set with valueFrom (the downward
  API, a ConfigMap) has no literal value: None.
  """
  args = list(container.get("command") or []) + list(
      container.get("args") or [])
  for flag in _names(flags):
    for i, a in enumerate(args):
      if a == flag:
        nxt = args[i + 1] if i + 1 < len(args) else None
        return nxt if nxt is not None and not nxt.startswith("-") else "true"
      if a.startswith(flag + "="):
        return a[len(flag) + 1:]
  for env in _names(envs):
    for e in container.get("env") or []:
      if e.get("name") == env:
        return e.get("value")
  return None


def env_entry(container, name):
  """The container's env entry named name (a dict); None when absent."""
  for e in container.get("env") or []:
    if e.get("name") == name:
      return e
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
  """Appends a problem unless ctr_path is the host's host_path.

  writable: the mount must not be readOnly. Returns the mount (a dict) that
  holds ctr_path, or None when no hostPath volume does.
  """
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
