"""kube-apiserver's checks of a resource.k8s.io/v1 ResourceSlice.

SliceRules(kube_minor).check_slice(obj, old) returns the list of
kube_fields.FieldError of a ResourceSlice (old: the stored one on update,
None on create), after pkg/apis/resource/validation of the release:
metadata, the pool's slice count, the node-selection union, immutable
fields, the device count, unique device and counter names, counts of
attributes and counters, one value per attribute, per-device node
selection, consumable capacity's requestPolicy (check_request_policy),
shared counters (at most 8 sets of 32 counters, a slice of devices or of
counters; a device consuming from at most 2 sets, at most 32 counters of
each), with what spans the slices of a pool in kube_pool_rules,
with the limits of kube_minor (34, 35 or 36). The checks of one
field (formats, enums, per-field limits) are kube_dra_common.field_rules,
checked with the schema. Safe from any thread.
"""

import decimal
import re

import kube_fields as kf
import kube_meta
from kube_dra_common import check_immutable, check_unique_names
from kube_meta import as_dict, as_list
import kube_dra_common as common

_ATTR_KINDS = ("bool", "int", "string", "version")
# resource.CapacityRequestPolicyDiscreteMaxOptions.
_VALID_VALUES_MAX = 10
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                       r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|"
                       r"[eE][+-]?[0-9]+)?\Z")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9,
            "T": 12, "P": 15, "E": 18}


def quantity(value):
  """A resource.Quantity (string or JSON number) as an exact Decimal; None
  if it is not one (the schema reports it)."""
  if isinstance(value, bool):
    return None
  if isinstance(value, (int, float)):
    return decimal.Decimal(str(value))
  if not isinstance(value, str):
    return None
  m = _QUANTITY.match(value)
  if m is None:
    return None
  number, suffix = decimal.Decimal(m.group(1)), m.group(2) or ""
  with decimal.localcontext() as ctx:
    ctx.prec = 200
    if suffix in _BINARY:
      return number * (decimal.Decimal(1024) ** _BINARY[suffix])
    if suffix in _DECIMAL:
      return number.scaleb(_DECIMAL[suffix])
    return number.scaleb(int(suffix[1:]))


def _whole(q):
  """Quantity.Value(): rounded up to a whole number."""
  return int(q.to_integral_value(rounding=decimal.ROUND_CEILING))


def _text(q):
  """q as Quantity.String() writes a binary quantity: the largest of Ki,
  Mi, ... that divides it, else the plain number."""
  if q == q.to_integral_value() and q >= 1024:
    whole = int(q)
    for suffix, power in sorted(_BINARY.items(), key=lambda x: -x[1]):
      if whole % (1024 ** power) == 0:
        return "%d%s" % (whole // 1024 ** power, suffix)
  return format(q.normalize(), "f")


def check_request_policy(errs, path, capacity, policy):
  """validateRequestPolicy of a multi-allocatable device's capacity (1.34+):
  validValues or validRange, not both; default required with either; valid
  values sorted, unique, at most 10, within the capacity, one of them the
  default; a range's min required and within the capacity, the default in
  [min, max], max within the capacity and not below min, min + step within
  the capacity, default and max a whole number of steps above min."""
  values = as_list(policy.get("validValues"))
  rng = policy.get("validRange")
  default = quantity(policy.get("default"))
  if values and rng is not None:
    kf.forbidden(errs, path, 'exactly one policy can be specified, cannot '
                 'specify "validValues" and "validRange" at the same time')
    return
  if values:
    if policy.get("default") is None:
      kf.required(errs, path + ".default", "required when validValues is "
                  "defined")
      return
    vpath = path + ".validValues"
    parsed = [quantity(v) for v in values]
    for i in range(len(parsed) - 1):
      if None not in (parsed[i], parsed[i + 1]) and parsed[i] > parsed[i + 1]:
        kf.invalid(errs, "%s[%d]" % (vpath, i + 1), values[i + 1],
                   "values must be sorted in ascending order")
    if len(values) > _VALID_VALUES_MAX:
      kf.too_many(errs, vpath, len(values), _VALID_VALUES_MAX)
      return
    seen = set()
    found = False
    for i, q in enumerate(parsed):
      if q is None:
        continue
      if q > capacity:
        kf.invalid(errs, "%s[%d]" % (vpath, i), values[i],
                   "option is larger than capacity value: %s" %
                   _text(capacity))
      if default is not None and q == default:
        found = True
      if _whole(q) in seen:
        kf.duplicate(errs, "%s[%d]" % (vpath, i), str(_whole(q)))
      seen.add(_whole(q))
    if not found:
      kf.invalid(errs, vpath, policy.get("default"),
                 "default value is not valid according to the requestPolicy")
    return
  if rng is None:
    return
  if policy.get("default") is None:
    kf.required(errs, path + ".default", "required when validRange is "
                "defined")
    return
  rng = as_dict(rng)
  rpath = path + ".validRange"
  low = quantity(rng.get("min"))
  if rng.get("min") is None or low is None:
    kf.required(errs, rpath + ".min", "required when validRange is defined")
    return
  if default is None:
    return
  if low > capacity:
    kf.invalid(errs, rpath + ".min", rng.get("min"),
               "min is larger than capacity value: %s" % _text(capacity))
  if default < low:
    kf.invalid(errs, rpath + ".min", policy.get("default"),
               "default is less than min: %s" % rng.get("min"))
  high = quantity(rng.get("max"))
  if high is not None:
    if low > high:
      kf.invalid(errs, rpath + ".max", rng.get("min"),
                 "min is larger than max: %s" % rng.get("max"))
    if high > capacity:
      kf.invalid(errs, rpath + ".max", rng.get("max"),
                 "max is larger than capacity value: %s" % _text(capacity))
    if default > high:
      kf.invalid(errs, rpath + ".max", policy.get("default"),
                 "default is more than max: %s" % rng.get("max"))
  step = quantity(rng.get("step"))
  if step is not None:
    if low + step > capacity:
      kf.invalid(errs, rpath + ".step", rng.get("step"),
                 "one step %s is larger than capacity value: %s" %
                 (_text(low + step), _text(capacity)))
    stride = _whole(step)
    for q, text in ((default, policy.get("default")),
                    (high, rng.get("max"))):
      if q is None or stride == 0:
        continue
      if (_whole(q) - _whole(low)) % stride != 0:
        kf.invalid(errs, rpath + ".step", text,
                   "value is not a multiple of a given step (%s) from (%s)" %
                   (rng.get("step"), rng.get("min")))


class SliceRules:
  """The ResourceSlice checks of one Kubernetes minor release."""

  def __init__(self, kube_minor):
    self.minor = kube_minor
    self.max_devices = 128
    self.max_devices_advanced = 64 if kube_minor >= 35 else 128

  def check_slice(self, obj, old):
    """Errors of a ResourceSlice (old: the stored one on update, or None)."""
    errs = []
    kube_meta.check_object_meta(errs, obj.get("metadata"), namespaced=False)
    spec = as_dict(obj.get("spec"))
    pool = as_dict(spec.get("pool"))
    count = pool.get("resourceSliceCount")
    if not isinstance(count, int) or count <= 0:
      kf.invalid(errs, "spec.pool.resourceSliceCount", count,
                 "must be greater than zero")
    if old is not None:
      old_spec = as_dict(old.get("spec"))
      check_immutable(errs, "spec.pool.name", pool.get("name"),
                      as_dict(old_spec.get("pool")).get("name"))
      check_immutable(errs, "spec.driver", spec.get("driver"),
                      old_spec.get("driver"))
      check_immutable(errs, "spec.nodeName", spec.get("nodeName"),
                      old_spec.get("nodeName"))
    self._check_node_union(errs, spec)
    devices = spec.get("devices")
    counters = spec.get("sharedCounters")
    if self.minor >= 35 and devices is not None and counters is not None:
      kf.invalid(errs, "spec", "",
                 "only one of `sharedCounters` or `devices` is allowed")
    self._check_devices(errs, spec, as_list(devices))
    self._check_shared_counters(errs, as_list(counters))
    return errs

  def _check_node_union(self, errs, spec):
    set_fields = []
    node_name = spec.get("nodeName")
    if isinstance(node_name, str):
      if node_name:
        set_fields.append("`nodeName`")
        kf.check_dns_subdomain(errs, "spec.nodeName", node_name)
      else:
        kf.invalid(errs, "spec.nodeName", node_name,
                   "must be either unset or set to a non-empty string")
    if isinstance(spec.get("nodeSelector"), dict):
      set_fields.append("`nodeSelector`")
      kube_meta.check_node_selector(errs, "spec.nodeSelector",
                                    spec["nodeSelector"])
      terms = as_list(spec["nodeSelector"].get("nodeSelectorTerms"))
      if len(terms) != 1:
        kf.invalid(errs, "spec.nodeSelector.nodeSelectorTerms", len(terms),
                   "must have exactly one node selector term")
    for field in ("allNodes", "perDeviceNodeSelection"):
      value = spec.get(field)
      if value is True:
        set_fields.append("`%s`" % field)
      elif value is False:
        kf.invalid(errs, "spec." + field, False,
                   "must be either unset or set to true")
    what = ("exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
            "`perDeviceNodeSelection` is required")
    if not set_fields:
      kf.required(errs, "spec", what)
    elif len(set_fields) > 1:
      kf.invalid(errs, "spec", "{%s}" % ", ".join(set_fields),
                 what + ", but multiple fields are set")

  def _check_devices(self, errs, spec, devices):
    tainted = any(as_list(as_dict(d).get("taints")) for d in devices)
    counting = any(as_list(as_dict(d).get("consumesCounters")) for d in devices)
    limit = self.max_devices
    if tainted or counting:
      limit = self.max_devices_advanced
    if len(devices) > limit:
      detail = ""
      if limit != self.max_devices:
        detail = " (devices with taints or consumesCounters)"
      kf.too_many(errs, "spec.devices", len(devices), limit)
      if detail:
        errs[-1].detail += detail
      return
    per_device = spec.get("perDeviceNodeSelection") is True
    for i, device in enumerate(devices):
      if isinstance(device, dict):
        self._check_device(errs, "spec.devices[%d]" % i, device, per_device)
    check_unique_names(errs, devices, "spec.devices")

  def _check_device(self, errs, path, device, per_device):
    attributes = as_dict(device.get("attributes"))
    capacity = as_dict(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > common.ATTRS_AND_CAPS_MAX:
      kf.invalid(errs, path, total, "the total number of attributes and "
                 "capacities must not exceed %d" % common.ATTRS_AND_CAPS_MAX)
    for name, attribute in attributes.items():
      kinds = [k for k in _ATTR_KINDS if as_dict(attribute).get(k) is not None]
      if len(kinds) != 1:
        kf.invalid(errs, "%s.attributes[%s]" % (path, name),
                   attribute if kinds else "",
                   "exactly one value must be specified")
    shared = device.get("allowMultipleAllocations") is True
    for name, cap in capacity.items():
      policy = as_dict(cap).get("requestPolicy")
      if policy is None:
        continue
      ppath = "%s.capacity[%s].requestPolicy" % (path, name)
      if not shared:
        kf.forbidden(errs, ppath, "allowMultipleAllocations must be true")
      elif isinstance(policy, dict):
        value = quantity(as_dict(cap).get("value"))
        if value is not None:
          check_request_policy(errs, ppath, value, policy)
    consumptions = as_list(device.get("consumesCounters"))
    if len(consumptions) > common.CONSUMPTIONS_MAX:
      kf.too_many(errs, path + ".consumesCounters", len(consumptions),
                  common.CONSUMPTIONS_MAX)
    check_unique_names(errs, consumptions, path + ".consumesCounters",
                       key="counterSet")
    for i, consumption in enumerate(consumptions):
      counters = as_dict(as_dict(consumption).get("counters"))
      cpath = "%s.consumesCounters[%d].counters" % (path, i)
      if not counters:
        kf.required(errs, cpath)
      elif self.minor >= 35 and len(counters) > common.COUNTERS_MAX:
        kf.too_many(errs, cpath, len(counters), common.COUNTERS_MAX)
    self._check_device_node(errs, path, device, per_device)

  def _check_shared_counters(self, errs, sets):
    path = "spec.sharedCounters"
    if self.minor >= 35 and len(sets) > common.COUNTER_SETS_MAX:
      kf.too_many(errs, path, len(sets), common.COUNTER_SETS_MAX)
      return
    total = sum(len(as_dict(as_dict(s).get("counters"))) for s in sets)
    if self.minor < 35 and total > common.COUNTERS_MAX:
      kf.invalid(errs, path, total, "the total number of shared counters must "
                 "not exceed %d" % common.COUNTERS_MAX)
    check_unique_names(errs, sets, path)
    for i, counter_set in enumerate(sets):
      counters = as_dict(as_dict(counter_set).get("counters"))
      cpath = "%s[%d].counters" % (path, i)
      if not counters:
        kf.required(errs, cpath)
      elif self.minor >= 35 and len(counters) > common.COUNTERS_MAX:
        kf.too_many(errs, cpath, len(counters), common.COUNTERS_MAX)

  def _check_device_node(self, errs, path, device, per_device):
    fields = [f for f in ("nodeName", "nodeSelector", "allNodes")
              if device.get(f) is not None]
    if not per_device:
      if fields:
        kf.invalid(errs, path, None, "`nodeName`, `nodeSelector` and "
                   "`allNodes` can only be set if `perDeviceNodeSelection` "
                   "is set to true in the ResourceSlice spec")
      return
    set_fields = []
    if device.get("nodeName") is not None:
      if device["nodeName"]:
        set_fields.append("`nodeName`")
        if isinstance(device["nodeName"], str):
          kf.check_dns_subdomain(errs, path + ".nodeName", device["nodeName"])
      else:
        kf.invalid(errs, path + ".nodeName", "", "must not be empty")
    if isinstance(device.get("nodeSelector"), dict):
      set_fields.append("`nodeSelector`")
      kube_meta.check_node_selector(errs, path + ".nodeSelector",
                                    device["nodeSelector"])
    if device.get("allNodes") is True:
      set_fields.append("`allNodes`")
    elif device.get("allNodes") is False:
      kf.invalid(errs, path + ".allNodes", False,
                 "must be either unset or set to true")
    if len(set_fields) != 1:
      kf.invalid(errs, path, "{%s}" % ", ".join(set_fields),
                 "exactly one of `nodeName`, `nodeSelector`, or `allNodes` "
                 "is required when `perDeviceNodeSelection` is set to true "
                 "in the ResourceSlice spec")

