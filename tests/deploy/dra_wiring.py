"""What the DRA side of the plugin needs from a rendered overlay.

  check_pod(ds, container, where, volumes, device_api, problems)
  problems += check_cluster(ds, container, rendered, device_api)

check_pod checks the DaemonSet for --device-api=dra or both: NODE_NAME from
the downward API (spec.nodeName), the kubelet's plugin registration and
plugins directories mounted writable at the same path as on the host (the
kubelet dials the socket path the plugin reports), the DRA socket path
short enough, a ServiceAccount of its own with its token mounted. Its
problems name the DaemonSet's field (the caller prefixes the DaemonSet).

check_cluster checks the objects around it: the ServiceAccount exists; a
ClusterRoleBinding gives it a ClusterRole granting exactly what the DRA side
uses (REQUIRED_RULES); a ValidatingAdmissionPolicy, bound with Deny, matches
the ServiceAccount's username and compares each ResourceSlice's
spec.nodeName (oldObject's on DELETE) with the token's node name; NVIDIA's
DeviceClasses select this driver's GPUs and MIG devices, gpu.nvidia.com
backing nvidia.com/gpu unless the device plugin serves it on the same nodes
(--device-api=both; KEP-5004 forbids a node both). Its problems start with
the object they concern.
"""

import posixpath
import re

from manifest_util import check_host_mount, env_entry, setting

DRIVER = "gpu.nvidia.com"
REGISTRATION_DIR = "/var/lib/kubelet/plugins_registry"
PLUGINS_DIR = "/var/lib/kubelet/plugins"
PROC = "/proc"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
EXTENDED_RESOURCE = "nvidia.com/gpu"
# (apiGroup, resource, verb) the DRA side uses; nothing else is granted.
REQUIRED_RULES = frozenset(
    [("resource.k8s.io", "resourceslices", v)
     for v in ("get", "list", "watch", "create", "update", "delete")] +
    [("resource.k8s.io", "resourceclaims", "get"), ("", "nodes", "get")])
# NVIDIA's DeviceClasses: name -> the device type their selector picks.
DEVICE_CLASSES = {"gpu.nvidia.com": "gpu", "mig.nvidia.com": "mig"}
_SOCKET_MAX = 107  # bytes of a unix socket address, as the plugin checks


def driver_name(c):
  return setting(c, "--dra-driver-name", "DRA_DRIVER_NAME") or DRIVER


def _dirs(c):
  reg = setting(c, ("--kubelet-registration-dir",
                    "--kubelet-registrar-directory-path"),
                ("KUBELET_REGISTRATION_DIR",
                 "KUBELET_REGISTRAR_DIRECTORY_PATH")) or REGISTRATION_DIR
  plugins = setting(c, ("--kubelet-plugins-dir",
                        "--kubelet-plugins-directory-path"),
                    ("KUBELET_PLUGINS_DIR",
                     "KUBELET_PLUGINS_DIRECTORY_PATH")) or PLUGINS_DIR
  return reg, plugins


def _from_node_name(entry):
  ref = ((entry or {}).get("valueFrom") or {}).get("fieldRef") or {}
  return ref.get("fieldPath") == "spec.nodeName"


def check_pod(ds, c, where, volumes, device_api, problems):
  """The DaemonSet's DRA settings; see the module docstring."""
  del device_api  # dra and both need the same
  spec = ds["spec"]["template"]["spec"]
  path = "spec.template.spec"
  # The node name, from the downward API: a fixed name would be wrong on
  # every node but one.
  flag = setting(c, "--node-name", ())
  if flag is not None:
    m = re.fullmatch(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", flag)
    if m is None or not _from_node_name(env_entry(c, m.group(1))):
      problems.append(f"{where}: --node-name={flag}: expected $(VAR) with "
                      "VAR set from the downward API (fieldRef spec.nodeName)")
  elif not _from_node_name(env_entry(c, "NODE_NAME")):
    problems.append(f"{where}.env: NODE_NAME must come from the downward "
                    "API (valueFrom.fieldRef.fieldPath: spec.nodeName) with "
                    "--device-api=dra or both")
  # The kubelet's directories, at the host's paths.
  reg, plugins = _dirs(c)
  for d in (reg, plugins):
    check_host_mount(c, volumes, d, d, True, where, problems)
  driver = driver_name(c)
  for sock in (posixpath.join(reg, f"{driver}-reg.sock"),
               posixpath.join(plugins, driver, "dra.sock")):
    if len(sock.encode()) > _SOCKET_MAX:
      problems.append(f"{where}: the DRA socket path {sock} is longer than "
                      f"the {_SOCKET_MAX} bytes a unix socket address holds")
  proc = setting(c, "--proc-root", "PROC_ROOT")
  if proc and posixpath.normpath(proc) != PROC:
    check_host_mount(c, volumes, PROC, proc, False, where, problems)
  # The API server: the pod's ServiceAccount token, unless a kubeconfig
  # says otherwise.
  if setting(c, "--kubeconfig", "KUBECONFIG") is not None:
    return
  if spec.get("automountServiceAccountToken") is False:
    problems.append(f"{path}.automountServiceAccountToken: false, but the "
                    "DRA side reads its token to reach the API server")
  sa = spec.get("serviceAccountName")
  if not sa or sa == "default":
    problems.append(f"{path}.serviceAccountName: {sa!r}: the DRA side needs "
                    "a ServiceAccount of its own (RBAC, admission policy)")


def _find(rendered, kind, name=None, namespace=None):
  return [o for o in rendered if o.get("kind") == kind and
          (name is None or o["metadata"].get("name") == name) and
          (namespace is None or o["metadata"].get("namespace") == namespace)]


def check_cluster(ds, c, rendered, device_api):
  """Problems of the objects the DRA side relies on; see the docstring."""
  problems = []
  spec = ds["spec"]["template"]["spec"]
  ns = ds["metadata"].get("namespace")
  sa = spec.get("serviceAccountName")
  if setting(c, "--kubeconfig", "KUBECONFIG") is None and sa and \
      sa != "default":
    problems += _check_service_account(rendered, spec, ns, sa)
  problems += _check_device_classes(rendered, driver_name(c), device_api)
  return problems


def _check_service_account(rendered, spec, ns, sa):
  problems = []
  accounts = _find(rendered, "ServiceAccount", sa, ns)
  if not accounts:
    problems.append(f"ServiceAccount {ns}/{sa}: not in the rendered output "
                    "(the DaemonSet's serviceAccountName)")
  elif accounts[0].get("automountServiceAccountToken") is False and \
      spec.get("automountServiceAccountToken") is None:
    problems.append(f"ServiceAccount {ns}/{sa}: automountServiceAccountToken "
                    "is false and the pod does not override it")
  subject = {"kind": "ServiceAccount", "name": sa, "namespace": ns}
  granted, roles = set(), []
  for b in _find(rendered, "ClusterRoleBinding"):
    if not any(all(s.get(k) == v for k, v in subject.items())
               for s in b.get("subjects") or []):
      continue
    ref = b.get("roleRef") or {}
    desc = f"ClusterRoleBinding {b['metadata']['name']}"
    if ref.get("kind") != "ClusterRole" or \
        ref.get("apiGroup") != "rbac.authorization.k8s.io":
      problems.append(f"{desc}: roleRef: expected a ClusterRole of "
                      "rbac.authorization.k8s.io")
      continue
    role = _find(rendered, "ClusterRole", ref.get("name"))
    if not role:
      problems.append(f"{desc}: roleRef.name: ClusterRole "
                      f"{ref.get('name')!r} is not in the rendered output")
      continue
    roles.append(ref["name"])
    granted |= _grants(role[0], problems)
  if not roles:
    problems.append(f"ServiceAccount {ns}/{sa}: no ClusterRoleBinding binds "
                    "it to a ClusterRole in the rendered output")
    return problems
  where = f"ClusterRole {', '.join(sorted(roles))}"
  for g, r, v in sorted(REQUIRED_RULES - granted):
    problems.append(f"{where}: rules: missing {v} on {g or 'core'} {r}")
  for g, r, v in sorted(granted - REQUIRED_RULES):
    problems.append(f"{where}: rules: grants {v} on {g or 'core'} {r}, "
                    "which the DRA side does not use")
  problems += _check_policy(rendered, f"system:serviceaccount:{ns}:{sa}")
  return problems


def _grants(role, problems):
  """{(apiGroup, resource, verb)} a ClusterRole grants."""
  out = set()
  desc = f"ClusterRole {role['metadata']['name']}"
  if role.get("aggregationRule"):
    problems.append(f"{desc}: aggregationRule: the DRA role must list its "
                    "rules itself")
  for i, rule in enumerate(role.get("rules") or []):
    where = f"{desc}: rules[{i}]"
    if rule.get("resourceNames") or rule.get("nonResourceURLs"):
      problems.append(f"{where}: resourceNames/nonResourceURLs: not expected "
                      "(list and watch cannot be narrowed by name)")
    for g in rule.get("apiGroups") or []:
      for r in rule.get("resources") or []:
        for v in rule.get("verbs") or []:
          if "*" in (g, r, v):
            problems.append(f"{where}: '*' grants more than the DRA side "
                            "uses")
          out.add((g, r, v))
  return out


def _exprs(items, field="expression"):
  return [" ".join(str(i.get(field) or "").split()) for i in items or []]


def _check_policy(rendered, username):
  """A bound policy limits username to its own node's ResourceSlices."""
  policies = [p for p in _find(rendered, "ValidatingAdmissionPolicy")
              if any(f"'{username}'" in e and "request.userInfo.username" in e
                     for e in _exprs((p.get("spec") or {}).get(
                         "matchConditions")))]
  if not policies:
    return [f"ValidatingAdmissionPolicy: none matches {username} "
            f"(spec.matchConditions: request.userInfo.username == "
            f"'{username}'), so RBAC lets it write any node's ResourceSlices"]
  problems = []
  for p in policies:
    name = p["metadata"]["name"]
    desc = f"ValidatingAdmissionPolicy {name}"
    spec = p["spec"]
    if spec.get("failurePolicy", "Fail") != "Fail":
      problems.append(f"{desc}: spec.failurePolicy: "
                      f"{spec.get('failurePolicy')!r}, expected Fail (an "
                      "error must not let a write through)")
    ops = set()
    for r in (spec.get("matchConstraints") or {}).get("resourceRules") or []:
      if set(r.get("apiGroups") or []) & {"resource.k8s.io", "*"} and \
          set(r.get("resources") or []) & {"resourceslices", "*"}:
        ops |= set(r.get("operations") or [])
    missing = {"CREATE", "UPDATE", "DELETE"} - ops if "*" not in ops else ()
    for op in sorted(missing):
      problems.append(f"{desc}: spec.matchConstraints.resourceRules: "
                      f"{op} of resource.k8s.io resourceslices is not matched")
    text = " ".join(_exprs(spec.get("variables")) +
                    _exprs(spec.get("validations")))
    for needle, why in (
        (f"request.userInfo.extra['{NODE_NAME_KEY}']",
         "the token's node name"),
        ("object.spec.nodeName", "the new slice's node (CREATE, UPDATE)"),
        ("oldObject.spec.nodeName", "the stored slice's node (DELETE)")):
      if needle not in text:
        problems.append(f"{desc}: spec.variables/validations: nothing reads "
                        f"{needle} ({why})")
    for i, v in enumerate(spec.get("validations") or []):
      if not v.get("message") and not v.get("messageExpression"):
        problems.append(f"{desc}: spec.validations[{i}]: no message or "
                        "messageExpression naming the node")
    bindings = [b for b in _find(rendered, "ValidatingAdmissionPolicyBinding")
                if (b.get("spec") or {}).get("policyName") == name]
    if not any("Deny" in (b["spec"].get("validationActions") or [])
               for b in bindings):
      problems.append(f"{desc}: no ValidatingAdmissionPolicyBinding with "
                      "spec.policyName naming it and validationActions "
                      "[Deny] (an unbound policy does nothing)")
  return problems


def _check_device_classes(rendered, driver, device_api):
  problems = []
  for name, device_type in DEVICE_CLASSES.items():
    classes = _find(rendered, "DeviceClass", name)
    desc = f"DeviceClass {name}"
    if not classes:
      problems.append(f"{desc}: not in the rendered output (NVIDIA's claims "
                      "name it)")
      continue
    spec = classes[0].get("spec") or {}
    want = (f"device.driver == '{driver}'",
            f"device.attributes['{driver}'].type == '{device_type}'")
    exprs = _exprs([s.get("cel") or {} for s in spec.get("selectors") or []])
    if not any(all(w in e for w in want) for e in exprs):
      problems.append(f"{desc}: spec.selectors: no CEL expression with "
                      f"{want[0]} && {want[1]}")
    if device_type != "gpu":
      continue
    ext = spec.get("extendedResourceName")
    if device_api == "both" and ext == EXTENDED_RESOURCE:
      problems.append(f"{desc}: spec.extendedResourceName: {ext} is served "
                      "by the device plugin on these nodes (--device-api="
                      "both); KEP-5004 forbids backing it through DRA too")
    elif device_api == "dra" and ext != EXTENDED_RESOURCE:
      problems.append(f"{desc}: spec.extendedResourceName: {ext!r}, "
                      f"expected {EXTENDED_RESOURCE} (KEP-5004, as NVIDIA's "
                      "driver)")
  return problems
