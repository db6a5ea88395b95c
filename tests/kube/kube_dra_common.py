"""Shared pieces of the resource.k8s.io/v1 checks (kube_dra_rules).

Name formats of the DRA API (driver names, pool names, device names,
QualifiedNames of attributes and capacities), set and union helpers, opaque
configuration and CEL selector checks, and the limits of
pkg/apis/resource. Each check_* appends kube_fields.FieldError to errs.
The as_* helpers give a value of the wrong JSON type as empty, so checks
can skip what the schema check reports. Pure functions.
"""

import json

import kube_fields as kf
import kube_meta

ATTR_ID_MAX = 32
ATTR_VALUE_MAX = 64
POOL_NAME_MAX = 253
ATTRS_AND_CAPS_MAX = 32
REQUESTS_MAX = 32
SELECTORS_MAX = 32
CONFIG_MAX = 32
CONSTRAINTS_MAX = 32
SUBREQUESTS_MAX = 8
RESULTS_MAX = 32
RESERVED_FOR_MAX = 256
CEL_MAX = 10 * 1024
OPAQUE_MAX = 10 * 1024
STATUS_CONDITIONS_MAX = 8
STATUS_DATA_MAX = 10 * 1024
COUNTERS_MAX = 32
COUNTER_SETS_MAX = 8


def as_str(value):
  """value if it is a string, else None."""
  return value if isinstance(value, str) else None


def as_dict(value):
  """value if it is a dict, else {}."""
  return value if isinstance(value, dict) else {}


def as_list(value):
  """value if it is a list, else []."""
  return value if isinstance(value, list) else []


def check_immutable(errs, path, new, old):
  """Invalid "field is immutable" when new differs from old."""
  if not kube_meta.same(new, old):
    kf.invalid(errs, path, new, "field is immutable")


def check_driver_name(errs, path, name):
  """ValidateCSIDriverName: required, <= 63, DNS subdomain (any case)."""
  if not name:
    kf.required(errs, path)
    return
  if len(name) > 63:
    kf.too_long(errs, path, 63)
  kf.check_dns_subdomain(errs, path, name.lower())


def check_pool_name(errs, path, name):
  """Non-empty, <= 253, DNS subdomains separated by '/'."""
  if not name:
    kf.required(errs, path)
    return
  if len(name) > POOL_NAME_MAX:
    kf.too_long(errs, path, POOL_NAME_MAX)
  for part in name.split("/"):
    kf.check_dns_subdomain(errs, path, part)


def check_device_name(errs, path, name):
  """A device or request name: a DNS label, required."""
  if not name:
    kf.required(errs, path)
  else:
    kf.check_dns_label(errs, path, name)


def check_qualified_attr_name(errs, path, name):
  """QualifiedName: C identifier <= 32, or <domain <= 63>/<C identifier>."""
  parts = name.split("/")
  if len(parts) == 1:
    kf.check_c_identifier(errs, path, name, ATTR_ID_MAX)
  elif len(parts) == 2:
    if not parts[0]:
      kf.invalid(errs, path, "", "the domain must not be empty")
    else:
      check_driver_name(errs, path, parts[0])
    if not parts[1]:
      kf.invalid(errs, path, "", "the name must not be empty")
    else:
      kf.check_c_identifier(errs, path, parts[1], ATTR_ID_MAX)
  else:
    kf.invalid(errs, path, name, "must not contain more than one slash")


def check_unique_names(errs, items, path, key="name", check=None):
  """Duplicate errors for repeated item[key]; check(errs, path, name)."""
  seen = set()
  for i, item in enumerate(items):
    name = as_str(as_dict(item).get(key)) if key else as_str(item)
    item_path = "%s[%d]" % (path, i)
    if check is not None and name is not None:
      check(errs, item_path + ("." + key if key else ""), name)
    if name is None:
      continue
    if name in seen:
      kf.duplicate(errs, item_path, name)
    seen.add(name)


def check_opaque(errs, path, config):
  """config.opaque: a driver name and parameters, a JSON object <= 10 KiB."""
  opaque = config.get("opaque")
  if not isinstance(opaque, dict):
    kf.required(errs, path + ".opaque")
    return
  check_driver_name(errs, path + ".opaque.driver",
                    as_str(opaque.get("driver")) or "")
  params = opaque.get("parameters")
  ppath = path + ".opaque.parameters"
  if params is None:
    kf.required(errs, ppath)
  elif not isinstance(params, dict):
    kf.invalid(errs, ppath, "<value omitted>", "must be a valid JSON object")
  elif len(json.dumps(params, separators=(",", ":"))) > OPAQUE_MAX:
    kf.too_long(errs, ppath, OPAQUE_MAX)


def check_cel_selectors(errs, path, selectors):
  """<= 32 selectors, each with a non-empty cel.expression <= 10 KiB.

  The expressions are not compiled.
  """
  if len(selectors) > SELECTORS_MAX:
    kf.too_many(errs, path, len(selectors), SELECTORS_MAX)
    return
  for i, selector in enumerate(selectors):
    cel = as_dict(selector).get("cel")
    spath = "%s[%d].cel" % (path, i)
    if not isinstance(cel, dict):
      kf.required(errs, spath)
      continue
    expression = as_str(cel.get("expression")) or ""
    if not expression.strip():
      kf.required(errs, spath + ".expression", "must not be empty")
    elif len(expression) > CEL_MAX:
      kf.too_long(errs, spath + ".expression", CEL_MAX)

