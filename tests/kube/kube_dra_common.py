"""Shared pieces of the resource.k8s.io/v1 checks (kube_dra_rules).

Name formats of the DRA API (driver names, pool names, QualifiedNames of
attributes and capacities), uniqueness, opaque configuration and CEL
selector checks, the limits of pkg/apis/resource, and field_rules: the
checks of one field, for the schema. Each check_* appends
kube_fields.FieldError to errs, skipping values of the wrong JSON type
(kube_meta.as_*: the schema check reports them). Pure functions.
"""

import ipaddress
import json

import kube_fields as kf
import kube_meta
from kube_meta import as_dict, as_str

ATTR_ID_MAX = 32
ATTR_VALUE_MAX = 64
POOL_NAME_MAX = 253
ATTRS_AND_CAPS_MAX = 32
SELECTORS_MAX = 32
CONFIG_MAX = 32
CEL_MAX = 10 * 1024
OPAQUE_MAX = 10 * 1024
STATUS_DATA_MAX = 10 * 1024
COUNTERS_MAX = 32
COUNTER_SETS_MAX = 8
# ResourceSliceMaxDeviceCounterConsumptionsPerDevice.
CONSUMPTIONS_MAX = 2


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


def check_unique_names(errs, items, path, key="name"):
  """Duplicate errors for repeated item[key] (key None: the item)."""
  seen = set()
  for i, item in enumerate(items):
    name = as_str(as_dict(item).get(key)) if key else as_str(item)
    if name is not None and name in seen:
      kf.duplicate(errs, "%s[%d]" % (path, i), name)
    seen.add(name)


def check_opaque(errs, path, config):
  """config.opaque: parameters a JSON object of at most 10 KiB."""
  opaque = config.get("opaque")
  if not isinstance(opaque, dict):
    kf.required(errs, path + ".opaque")
    return
  params = opaque.get("parameters")
  ppath = path + ".opaque.parameters"
  if params is not None and not isinstance(params, dict):
    kf.invalid(errs, ppath, "<value omitted>", "must be a valid JSON object")
  elif len(json.dumps(params, separators=(",", ":"))) > OPAQUE_MAX:
    kf.too_long(errs, ppath, OPAQUE_MAX)


def check_selectors(errs, path, selectors):
  """Each selector has a cel member with a non-empty expression of at most
  10 KiB (not compiled)."""
  for i, selector in enumerate(selectors):
    cel = as_dict(selector).get("cel")
    if not isinstance(cel, dict):
      kf.required(errs, "%s[%d].cel" % (path, i))
      continue
    expression = as_str(cel.get("expression")) or ""
    if not expression.strip():
      kf.required(errs, "%s[%d].cel.expression" % (path, i),
                  "must not be empty")
    elif len(expression) > CEL_MAX:
      kf.too_long(errs, "%s[%d].cel.expression" % (path, i), CEL_MAX)


def _check_cidr(errs, path, ip):
  try:
    if "/" not in ip:
      raise ValueError(ip)
    ipaddress.ip_interface(ip)
  except ValueError:
    kf.invalid(errs, path, ip, "must be a valid address in CIDR form, (e.g. "
               "10.9.8.7/24 or 2001:db8::1/64)")


def _check_semver(errs, path, version):
  if not kf.is_semver(version):
    kf.invalid(errs, path, version,
               "must be a string compatible with semver.org spec 2.0.0")


def _required(check):
  """check(errs, path, value), with an empty value a Required error."""
  def run(errs, path, value):
    if not value:
      kf.required(errs, path)
    else:
      check(errs, path, value)
  return run


# The formats of field_rules: kube_schema checks of (errs, path, value).
CHECKS = {
    "dns-label": _required(kf.check_dns_label),
    "dns-subdomain": _required(kf.check_dns_subdomain),
    "driver-name": check_driver_name,
    "pool-name": check_pool_name,
    "qualified-name": _required(kf.check_qualified_name),
    "label-value": kf.check_label_value,
    "attribute-name": check_qualified_attr_name,
    "semver": _check_semver,
    "cidr": _check_cidr,
}


def field_rules(kube_minor):
  """What pkg/apis/resource/validation of the release checks on one field
  and the OpenAPI document does not state: a kube_schema overlay
  ({schema name: {property: JSON Schema}}) whose formats are CHECKS."""
  label = {"format": "dns-label"}
  names = {"propertyNames": {"format": "attribute-name"}}
  counters = {"propertyNames": label}
  one_request = {"deviceClassName": {"format": "dns-subdomain"},
                 "selectors": {"maxItems": SELECTORS_MAX}}
  device_ref = {"driver": {"format": "driver-name"},
                "pool": {"format": "pool-name"}, "device": label}
  rules = {
      "ResourceSliceSpec": {"driver": {"format": "driver-name"}},
      "ResourcePool": {"name": {"format": "pool-name"},
                       "generation": {"minimum": 0}},
      "Device": {"name": label, "attributes": names, "capacity": names,
                 "taints": {"maxItems": 16 if kube_minor >= 35 else 4}},
      "DeviceAttribute": {
          "string": {"maxLength": ATTR_VALUE_MAX},
          "version": {"format": "semver", "maxLength": ATTR_VALUE_MAX}},
      "DeviceTaint": {"key": {"format": "qualified-name"},
                      "value": {"format": "label-value"},
                      "effect": {"enum": list(taint_effects(kube_minor))}},
      "DeviceCounterConsumption": {"counterSet": label, "counters": counters},
      "CounterSet": {"name": label, "counters": counters},
      "DeviceClaim": {"requests": {"maxItems": 32},
                      "constraints": {"maxItems": 32},
                      "config": {"maxItems": CONFIG_MAX}},
      "DeviceRequest": {"name": label, "firstAvailable": {"maxItems": 8}},
      "ExactDeviceRequest": one_request,
      "DeviceSubRequest": dict(one_request, name=label),
      "OpaqueDeviceConfiguration": {"driver": {"format": "driver-name"}},
      "DeviceAllocationConfiguration": {
          "source": {"enum": ["FromClaim", "FromClass"]}},
      "ResourceClaimStatus": {"reservedFor": {"maxItems": 256}},
      "ResourceClaimConsumerReference": {
          f: {"minLength": 1} for f in ("resource", "name", "uid")},
      "DeviceAllocationResult": {"results": {"maxItems": 32},
                                 "config": {"maxItems": 2 * CONFIG_MAX}},
      "DeviceRequestAllocationResult": device_ref,
      "AllocatedDeviceStatus": dict(device_ref, conditions={"maxItems": 8}),
      "NetworkDeviceData": {
          "interfaceName": {"maxLength": 256},
          "hardwareAddress": {"maxLength": 128},
          "ips": {"maxItems": 16, "items": {"format": "cidr"}}},
      "DeviceClassSpec": {
          "selectors": {"maxItems": SELECTORS_MAX},
          "config": {"maxItems": CONFIG_MAX}},
  }
  return {"io.k8s.api.resource.v1." + k: v for k, v in rules.items()}


def taint_effects(kube_minor):
  """The taint effects the release accepts."""
  if kube_minor >= 35:
    return ("NoExecute", "NoSchedule", "None")
  return ("NoExecute", "NoSchedule")
