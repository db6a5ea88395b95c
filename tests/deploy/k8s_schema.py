"""Offline checks of Kubernetes objects, as the API server would make them.

check_object(obj) checks an object (a dict parsed from YAML) with
tests/kube/kube_schema.py (python3-jsonschema) against a JSON Schema made
from the generated model classes of Debian's python3-kubernetes (22.6.0:
every model has openapi_types, attribute_map and setters that refuse a
missing required field; unknown fields are refused), then makes the checks
the API server makes that the schema cannot express (names, enums, privileged with allowPrivilegeEscalation: false,
selectors, volume and port references, ...). Every problem is returned as a
string that starts with the field's path, e.g.
"spec.template.spec.containers[0].ports[0].containerPort: expected an
integer, got str '9445'".
"""

import os
import re
import sys

import kubernetes.client
import kubernetes.utils
import kubernetes.client.models as models

sys.dont_write_bytecode = True  # No __pycache__ in tests/kube.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "kube"))
# pylint: disable=wrong-import-position
import kube_fields
import kube_meta
import kube_schema

QUANTITY = "#/components/schemas/" + kube_schema.QUANTITY

# (apiVersion, kind) -> model class name. Only kinds this project renders or
# is likely to add; anything else is refused rather than passed unchecked.
KINDS = {
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "Pod"): "V1Pod",
    ("v1", "Secret"): "V1Secret",
    ("v1", "Service"): "V1Service",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("node.k8s.io/v1", "RuntimeClass"): "V1RuntimeClass",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "V1ClusterRole",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"):
        "V1ClusterRoleBinding",
    ("scheduling.k8s.io/v1", "PriorityClass"): "V1PriorityClass",
}

_SELECTOR_OPS = ["DoesNotExist", "Exists", "In", "NotIn"]


def _format(regex, why, max_len=None):
  """A kube_schema check(errs, path, value): value matches regex."""
  def check(errs, path, value):
    if not re.match(regex, value) or (max_len and len(value) > max_len):
      errs.append(kube_fields.FieldError(path, "Invalid", value, why))
  return check


# The formats of FIELD_RULES.
_CHECKS = {
    "dns-label": _format(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                         "is not a DNS label", 63),
    "absolute": _format("/", "is not absolute"),
    "env-name": _format(r"[-._a-zA-Z][-._a-zA-Z0-9]*$",
                        "is not a valid variable name"),
    "configmap-key": _format(r"[-._a-zA-Z0-9]+$",
                             "is not a valid ConfigMap key", 253),
    "port-name": _format(r"(?!.*--)(?=.*[a-z])[a-z0-9]([a-z0-9-]*[a-z0-9])?$",
                         "is not an IANA service name", 15),
}
# The API server's checks of one field that the models do not state, as
# JSON Schema added to the models' (kube_schema.add_rules).
_ONE_OF = {"DaemonSetUpdateStrategy": ("type", ["OnDelete", "RollingUpdate"]),
           "HostPathVolumeSource": ("type", [
               "", "BlockDevice", "CharDevice", "Directory",
               "DirectoryOrCreate", "File", "FileOrCreate", "Socket"]),
           "LabelSelectorRequirement": ("operator", _SELECTOR_OPS),
           "NodeSelectorRequirement": ("operator", _SELECTOR_OPS + ["Gt",
                                                                   "Lt"])}
FIELD_RULES = {"V1" + k: {f: {"enum": v}} for k, (f, v) in _ONE_OF.items()}
FIELD_RULES["V1HostPathVolumeSource"]["path"] = {"format": "absolute"}
FIELD_RULES.update({
    "V1ConfigMap": {k: {"propertyNames": {"format": "configmap-key"}}
                    for k in ("data", "binaryData")},
    "V1Volume": {"name": {"format": "dns-label"}},
    "V1Toleration": {"operator": {"enum": ["Equal", "Exists"]},
                     "effect": {"enum": ["", "NoExecute", "NoSchedule",
                                         "PreferNoSchedule"]}},
    "V1Container": {"name": {"format": "dns-label"}, "image": {"minLength": 1},
                    "imagePullPolicy": {"enum": ["Always", "IfNotPresent",
                                                 "Never"]}},
    "V1ContainerPort": {"containerPort": {"minimum": 1, "maximum": 65535},
                        "protocol": {"enum": ["SCTP", "TCP", "UDP"]},
                        "name": {"format": "port-name"}},
    "V1EnvVar": {"name": {"format": "env-name"}},
    "V1VolumeMount": {"mountPath": {"format": "absolute"},
                      "mountPropagation": {"enum": [
                          "Bidirectional", "HostToContainer", "None"]}},
    "V1HTTPGetAction": {"path": {"format": "absolute"}},
})
_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_VOLUME_SOURCES_EXCLUDED = {"name"}


def parse_quantity(value):
  """A Kubernetes quantity ("50m", "64Mi", 2) as a float; None if invalid."""
  if isinstance(value, bool):
    return None
  try:
    return float(kubernetes.utils.parse_quantity(value))
  except ValueError:
    return None


def _required_attrs(cls):
  """Attributes whose setter refuses None (required by the API schema)."""
  cfg = kubernetes.client.Configuration()
  cfg.client_side_validation = True
  obj = cls.__new__(cls)
  obj.local_vars_configuration = cfg
  required = []
  for attr in cls.openapi_types:
    try:
      setattr(obj, attr, None)
    except ValueError:
      required.append(attr)
  return required


_QUANTITY_MAPS = ("limits", "requests", "overhead", "capacity", "allocatable")
_SCALARS = {"str": "string", "datetime": "string", "date": "string",
            "int": "integer", "float": "number", "bool": "boolean"}


def _model_type(t, field, schemas):
  """The JSON Schema of a python3-kubernetes openapi_types entry."""
  if t.startswith("list["):
    return {"type": "array", "items": _model_type(t[5:-1], None, schemas)}
  if t.startswith("dict("):
    inner = t[t.index(",") + 1:-1].strip()
    if inner == "str" and field in _QUANTITY_MAPS:
      return {"type": "object", "additionalProperties": {"$ref": QUANTITY}}
    return {"type": "object",
            "additionalProperties": _model_type(inner, None, schemas)}
  if t in _SCALARS:
    return {"type": _SCALARS[t]}
  if t == "object":
    return {}  # IntOrString and free-form fields; checked below where needed
  _add_model(t, schemas)
  return {"$ref": "#/components/schemas/" + t}


def _add_model(name, schemas):
  """Adds the JSON Schema of model class name (and those it uses)."""
  if name in schemas:
    return
  cls = getattr(models, name)
  node = {"type": "object", "properties": {}, "additionalProperties": False,
          "required": [cls.attribute_map[a] for a in _required_attrs(cls)]}
  schemas[name] = node
  for attr, t in cls.openapi_types.items():
    json_name = cls.attribute_map[attr]
    node["properties"][json_name] = _model_type(t, json_name, schemas)


def _model_schema():
  """kube_schema.Schema of the model classes of KINDS."""
  schemas = kube_schema.translate_document({})
  for cls_name in KINDS.values():
    _add_model(cls_name, schemas)
  kube_schema.add_rules(schemas, FIELD_RULES)
  return kube_schema.Schema(None, schemas, checks=_CHECKS)


_SCHEMA = _model_schema()
_WANT = {"integer": "an integer", "array": "a list", "string": "a string",
         "object": "an object", "boolean": "true or false",
         "number": "a number"}


def _problem(e):
  """A kube_fields.FieldError of the model schema as a problem string."""
  if e.kind == "Unknown":
    return f"{e.path}: unknown field"
  if e.kind == "Required":
    return f"{e.path}: required field missing"
  if e.kind == "TypeInvalid":
    want = e.detail.rsplit(" ", 1)[-1]
    return (f"{e.path}: expected {_WANT.get(want, want)}, got "
            f"{type(e.value).__name__} {e.value!r}")
  if e.kind == "Invalid" and e.detail == kube_schema.QUANTITY_DETAIL:
    return f"{e.path}: not a quantity: {e.value!r}"
  if e.kind == "NotSupported":
    return f"{e.path}: {e.value!r} is not one of [{e.detail[18:]}]"
  if e.kind == "Invalid":
    return f"{e.path}: {e.value!r} {e.detail}"
  return str(e)


def describe(obj):
  """'Kind namespace/name' for messages."""
  if not isinstance(obj, dict):
    return "<not an object>"
  meta = obj.get("metadata") or {}
  name = meta.get("name", "<no name>")
  ns = meta.get("namespace")
  return f"{obj.get('kind', '<no kind>')} {ns + '/' if ns else ''}{name}"


def check_object(obj):
  """Every problem the API server would refuse obj for; [] if none."""
  errors = []
  if not isinstance(obj, dict):
    return [f"<document>: expected an object, got {type(obj).__name__}"]
  key = (obj.get("apiVersion"), obj.get("kind"))
  cls_name = KINDS.get(key)
  if cls_name is None:
    return [f"apiVersion/kind: {key[0]}/{key[1]} is not a kind this test "
            f"knows (add it to KINDS in {__name__}.py)"]
  errors = [_problem(e) for e in _SCHEMA.check(cls_name, obj)]
  if errors:
    return errors  # semantic checks assume the shapes are right
  _check_metadata(obj.get("metadata") or {}, "metadata", errors,
                  namespaced=key not in {("v1", "Namespace"),
                                         ("scheduling.k8s.io/v1",
                                          "PriorityClass"),
                                         ("node.k8s.io/v1", "RuntimeClass"),
                                         ("rbac.authorization.k8s.io/v1",
                                          "ClusterRole"),
                                         ("rbac.authorization.k8s.io/v1",
                                          "ClusterRoleBinding")})
  kind = obj["kind"]
  if kind == "Pod":
    _check_pod_spec(obj.get("spec") or {}, "spec", errors, is_template=False)
  elif kind in ("DaemonSet", "Deployment"):
    _check_workload(obj, errors)
  return errors


def _fails(check, value):
  """Whether a kube_fields check(errs, path, value) refuses value."""
  errs = []
  check(errs, "", value)
  return bool(errs)


def _check_metadata(meta, path, errors, namespaced=True, template=False):
  if not template:
    name = meta.get("name")
    if not name and not meta.get("generateName"):
      errors.append(f"{path}.name: required (or generateName)")
    elif name and _fails(kube_fields.check_dns_subdomain, name):
      errors.append(f"{path}.name: {name!r} is not a DNS subdomain")
    ns = meta.get("namespace")
    if ns is not None and (not namespaced or
                           _fails(kube_fields.check_dns_label, ns)):
      errors.append(f"{path}.namespace: {ns!r} is not valid here")
  for k, v in (meta.get("labels") or {}).items():
    if _fails(kube_fields.check_label_value, v):
      errors.append(f"{path}.labels.{k}: {v!r} is not a valid label value")
  for field in ("labels", "annotations"):
    for k in meta.get(field) or {}:
      if _fails(kube_fields.check_qualified_name, k):
        errors.append(f"{path}.{field}: key {k!r} is not a valid qualified "
                      "name")


def _selector_matches(selector, labels):
  for k, v in (selector.get("matchLabels") or {}).items():
    if labels.get(k) != v:
      return False
  for e in selector.get("matchExpressions") or []:
    op, k, values = e.get("operator"), e.get("key"), e.get("values") or []
    if op == "In" and labels.get(k) not in values:
      return False
    if op == "NotIn" and labels.get(k) in values:
      return False
    if op == "Exists" and k not in labels:
      return False
    if op == "DoesNotExist" and k in labels:
      return False
  return True


def _check_label_selector(sel, path, errors):
  if not sel.get("matchLabels") and not sel.get("matchExpressions"):
    errors.append(f"{path}: empty selector (it would select every pod)")
  errs = []
  for i, req in enumerate(sel.get("matchExpressions") or []):
    kube_meta.check_requirement(errs, f"{path}.matchExpressions[{i}]", req,
                                fields=False)
  errors += [str(e) for e in errs]


def _check_workload(obj, errors):
  spec = obj["spec"]
  sel = spec["selector"]
  _check_label_selector(sel, "spec.selector", errors)
  template = spec["template"]
  labels = (template.get("metadata") or {}).get("labels") or {}
  _check_metadata(template.get("metadata") or {}, "spec.template.metadata",
                  errors, template=True)
  if not _selector_matches(sel, labels):
    errors.append("spec.selector: does not match spec.template.metadata."
                  f"labels {labels}")
  if obj["kind"] == "DaemonSet":
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type") == "OnDelete" and strategy.get("rollingUpdate"):
      errors.append("spec.updateStrategy.rollingUpdate: only with "
                    "type RollingUpdate")
  tspec = template.get("spec") or {}
  if tspec.get("restartPolicy", "Always") != "Always":
    errors.append("spec.template.spec.restartPolicy: must be Always")
  _check_pod_spec(tspec, "spec.template.spec", errors, is_template=True)


def _check_pod_spec(spec, path, errors, is_template):
  del is_template
  volumes = {}
  for i, v in enumerate(spec.get("volumes") or []):
    vp = f"{path}.volumes[{i}]"
    name = v.get("name")
    if name in volumes:
      errors.append(f"{vp}.name: duplicate volume {name!r}")
    volumes[name] = v
    sources = [k for k in v if k not in _VOLUME_SOURCES_EXCLUDED]
    if len(sources) != 1:
      errors.append(f"{vp}: exactly one volume source, got {sources}")
  for i, t in enumerate(spec.get("tolerations") or []):
    tp = f"{path}.tolerations[{i}]"
    op = t.get("operator", "Equal")
    if op == "Exists" and t.get("value"):
      errors.append(f"{tp}.value: must be empty with operator Exists")
    if not t.get("key") and op != "Exists":
      errors.append(f"{tp}.operator: must be Exists when key is empty")
  node_aff = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
      "requiredDuringSchedulingIgnoredDuringExecution")
  if node_aff:
    errs = []
    kube_meta.check_node_selector(
        errs, f"{path}.affinity.nodeAffinity.requiredDuringScheduling"
        "IgnoredDuringExecution", node_aff)
    errors += [str(e) for e in errs]
  names = set()
  for group in ("initContainers", "containers"):
    for i, c in enumerate(spec.get(group) or []):
      cp = f"{path}.{group}[{i}]"
      if c["name"] in names:
        errors.append(f"{cp}.name: duplicate container {c['name']!r}")
      names.add(c["name"])
      _check_container(c, cp, volumes, errors)
  if not spec.get("containers"):
    errors.append(f"{path}.containers: at least one container")


def _check_container(c, path, volumes, errors):
  port_names = {}
  for i, p in enumerate(c.get("ports") or []):
    pp = f"{path}.ports[{i}]"
    name = p.get("name")
    if name is not None:
      if name in port_names:
        errors.append(f"{pp}.name: duplicate port name {name!r}")
      port_names[name] = p["containerPort"]
  env_names = set()
  for i, e in enumerate(c.get("env") or []):
    ep = f"{path}.env[{i}]"
    if e["name"] in env_names:
      errors.append(f"{ep}.name: {e['name']!r} set twice")
    env_names.add(e["name"])
    if "value" in e and "valueFrom" in e:
      errors.append(f"{ep}: value and valueFrom are exclusive")
  sc = c.get("securityContext") or {}
  privileged = sc.get("privileged") is True
  if sc.get("allowPrivilegeEscalation") is False:
    if privileged:
      errors.append(f"{path}.securityContext: cannot set "
                    "allowPrivilegeEscalation to false and privileged to true")
    if "CAP_SYS_ADMIN" in ((sc.get("capabilities") or {}).get("add") or []):
      errors.append(f"{path}.securityContext: cannot set "
                    "allowPrivilegeEscalation to false and add CAP_SYS_ADMIN")
  mount_paths = set()
  for i, m in enumerate(c.get("volumeMounts") or []):
    mp = f"{path}.volumeMounts[{i}]"
    if m["name"] not in volumes:
      errors.append(f"{mp}.name: no volume named {m['name']!r}")
    if m["mountPath"] in mount_paths:
      errors.append(f"{mp}.mountPath: {m['mountPath']!r} mounted twice")
    mount_paths.add(m["mountPath"])
    if m.get("mountPropagation") == "Bidirectional" and not privileged:
      errors.append(f"{mp}.mountPropagation: Bidirectional needs a "
                    "privileged container")
  for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
    probe = c.get(probe_name)
    if probe is None:
      continue
    pp = f"{path}.{probe_name}"
    handlers = [h for h in _PROBE_HANDLERS if probe.get(h)]
    if len(handlers) != 1:
      errors.append(f"{pp}: exactly one of {list(_PROBE_HANDLERS)}, got "
                    f"{handlers}")
    for h in ("httpGet", "tcpSocket"):
      action = probe.get(h)
      if not action:
        continue
      port = action.get("port")
      if isinstance(port, str) and not port.isdigit():
        if port not in port_names:
          errors.append(f"{pp}.{h}.port: {port!r} names no port of the "
                        f"container (ports: {sorted(port_names)})")
      elif isinstance(port, (int, str)) and not isinstance(port, bool):
        if not 1 <= int(port) <= 65535:
          errors.append(f"{pp}.{h}.port: {port} out of range")
      else:
        errors.append(f"{pp}.{h}.port: expected a number or a port name, "
                      f"got {port!r}")
    if probe_name in ("livenessProbe", "startupProbe") and \
        probe.get("successThreshold", 1) != 1:
      errors.append(f"{pp}.successThreshold: must be 1")
  res = c.get("resources") or {}
  for k, req in (res.get("requests") or {}).items():
    lim = (res.get("limits") or {}).get(k)
    if lim is not None and parse_quantity(req) > parse_quantity(lim):
      errors.append(f"{path}.resources.requests.{k}: {req} exceeds the "
                    f"limit {lim}")
  for k in (res.get("requests") or {}):
    if "/" in k and k not in (res.get("limits") or {}):
      errors.append(f"{path}.resources.requests.{k}: an extended resource "
                    "must be set in limits (requests default to limits)")


def port_number(container, port):
  """The number a probe's port names (a number, or a port's name)."""
  if isinstance(port, int):
    return port
  if isinstance(port, str) and port.isdigit():
    return int(port)
  for p in container.get("ports") or []:
    if p.get("name") == port:
      return p["containerPort"]
  return None
