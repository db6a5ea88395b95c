"""kube-apiserver's checks of ObjectMeta and core/v1 NodeSelector.

check_object_meta(errs, meta, namespaced), check_node_selector(errs, path,
selector) and check_requirement(errs, path, requirement, fields) append
kube_fields.FieldError for every problem, the way apimachinery's
ValidateObjectMeta and core's ValidateNodeSelector report them; both skip values of the wrong JSON type (the schema check reports
those). same() and clone() compare and copy JSON values; as_str, as_dict
and as_list give a value of the wrong JSON type as None, {} or []. Pure
functions, safe from any thread.
"""

import kube_fields as kf

_TOTAL_ANNOTATION_SIZE = 256 * 1024
_NODE_SELECTOR_OPS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")
_FIELD_SELECTOR_OPS = ("In", "NotIn")


def as_str(value):
  """value if it is a string, else None."""
  return value if isinstance(value, str) else None


def as_dict(value):
  """value if it is a dict, else {}."""
  return value if isinstance(value, dict) else {}


def as_list(value):
  """value if it is a list, else []."""
  return value if isinstance(value, list) else []


def check_object_meta(errs, meta, namespaced):
  """Checks metadata (a dict) of an object of a namespaced or cluster kind.

  Every kind this emulator serves names objects with DNS subdomains.
  """
  meta = as_dict(meta)
  name = as_str(meta.get("name"))
  if not name:
    kf.required(errs, "metadata.name", "name or generateName is required")
  else:
    kf.check_dns_subdomain(errs, "metadata.name", name)
  namespace = as_str(meta.get("namespace")) or ""
  if namespaced:
    if not namespace:
      kf.required(errs, "metadata.namespace")
    else:
      kf.check_dns_label(errs, "metadata.namespace", namespace)
  elif namespace:
    kf.forbidden(errs, "metadata.namespace", "not allowed on this type")
  for key, value in as_dict(meta.get("labels")).items():
    path = "metadata.labels"
    kf.check_qualified_name(errs, path, key)
    if isinstance(value, str):
      kf.check_label_value(errs, path, value)
  annotations = as_dict(meta.get("annotations"))
  size = 0
  for key, value in annotations.items():
    kf.check_qualified_name(errs, "metadata.annotations", key.lower())
    size += len(key) + (len(value) if isinstance(value, str) else 0)
  if size > _TOTAL_ANNOTATION_SIZE:
    kf.too_long(errs, "metadata.annotations", _TOTAL_ANNOTATION_SIZE)
  _check_owner_references(errs, as_list(meta.get("ownerReferences")))
  for i, finalizer in enumerate(as_list(meta.get("finalizers"))):
    if isinstance(finalizer, str):
      kf.check_qualified_name(errs, "metadata.finalizers[%d]" % i, finalizer)


def _check_owner_references(errs, refs):
  controllers = 0
  for i, ref in enumerate(refs):
    if not isinstance(ref, dict):
      continue
    path = "metadata.ownerReferences[%d]" % i
    api_version = as_str(ref.get("apiVersion")) or ""
    version = api_version.rsplit("/", 1)[-1]
    if not version or api_version.count("/") > 1:
      kf.invalid(errs, path + ".apiVersion", api_version,
                 "version must not be empty")
    if not as_str(ref.get("kind")):
      kf.invalid(errs, path + ".kind", ref.get("kind", ""),
                 "kind must not be empty")
    name = as_str(ref.get("name")) or ""
    if not name:
      kf.invalid(errs, path + ".name", name, "name must not be empty")
    elif name in (".", "..") or "/" in name or "%" in name:
      kf.invalid(errs, path + ".name", name,
                 "may not be '.' or '..' and may not contain '/' or '%'")
    if not as_str(ref.get("uid")):
      kf.invalid(errs, path + ".uid", ref.get("uid", ""),
                 "uid must not be empty")
    if ref.get("controller") is True:
      controllers += 1
  if controllers > 1:
    kf.invalid(errs, "metadata.ownerReferences", controllers,
               "Only one reference can have Controller set to true")


def check_node_selector(errs, path, selector):
  """core/v1 NodeSelector: >= 1 term, each with valid requirements."""
  selector = as_dict(selector)
  terms = as_list(selector.get("nodeSelectorTerms"))
  terms_path = path + ".nodeSelectorTerms"
  if not terms:
    kf.required(errs, terms_path, "must have at least one node selector term")
  for i, term in enumerate(terms):
    term = as_dict(term)
    term_path = "%s[%d]" % (terms_path, i)
    for j, req in enumerate(as_list(term.get("matchExpressions"))):
      check_requirement(errs, "%s.matchExpressions[%d]" % (term_path, j),
                        as_dict(req), fields=False)
    for j, req in enumerate(as_list(term.get("matchFields"))):
      check_requirement(errs, "%s.matchFields[%d]" % (term_path, j),
                        as_dict(req), fields=True)


def check_requirement(errs, path, req, fields):
  """A selector requirement (a dict): of labels (matchExpressions) or, with
  fields, of a node's fields (matchFields)."""
  key = as_str(req.get("key")) or ""
  operator = as_str(req.get("operator")) or ""
  values = as_list(req.get("values"))
  if fields:
    if key != "metadata.name":
      kf.invalid(errs, path + ".key", key, "not a valid field selector key")
    if operator not in _FIELD_SELECTOR_OPS:
      kf.invalid(errs, path + ".operator", operator,
                 "not a valid selector operator")
    elif len(values) != 1:
      kf.required(errs, path + ".values",
                  "must be only one value when `operator` is 'In' or 'NotIn' "
                  "for node field selector")
    return
  if not key:
    kf.required(errs, path + ".key")
  else:
    kf.check_qualified_name(errs, path + ".key", key)
  if operator in ("In", "NotIn"):
    if not values:
      kf.required(errs, path + ".values",
                  "must be specified when `operator` is 'In' or 'NotIn'")
  elif operator in ("Exists", "DoesNotExist"):
    if values:
      kf.forbidden(errs, path + ".values", "may not be specified when "
                   "`operator` is 'Exists' or 'DoesNotExist'")
  elif operator in ("Gt", "Lt"):
    if len(values) != 1:
      kf.required(errs, path + ".values", "must be specified single value "
                  "when `operator` is 'Lt' or 'Gt'")
    else:
      try:
        int(values[0])
      except (TypeError, ValueError):
        kf.invalid(errs, path + ".values[0]", values[0],
                   "must be an integer")
  else:
    kf.not_supported(errs, path + ".operator", operator, _NODE_SELECTOR_OPS)
  for i, value in enumerate(values):
    if isinstance(value, str) and operator not in ("Gt", "Lt"):
      kf.check_label_value(errs, "%s.values[%d]" % (path, i), value)


def same(a, b):
  """Deep equality of two JSON values (dict order ignored)."""
  return a == b


def clone(value):
  """A deep copy of a JSON value (dicts, lists, scalars); fast."""
  if type(value) is dict:  # pylint: disable=unidiomatic-typecheck
    return {k: clone(v) for k, v in value.items()}
  if type(value) is list:  # pylint: disable=unidiomatic-typecheck
    return [clone(v) for v in value]
  return value
