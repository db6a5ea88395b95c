"""kube-apiserver's checks of a resource.k8s.io/v1 ResourceSlice.

SliceRules(kube_minor).check_slice(obj, old) returns the list of
kube_fields.FieldError of a ResourceSlice (old: the stored one on update,
None on create), after pkg/apis/resource/validation of the release:
metadata, driver, pool, the node-selection union, devices (names,
attributes, capacities, taints, counters, per-device node selection) and
shared counters, with the limits of kube_minor (34, 35 or 36). Safe from
any thread.
"""

import kube_fields as kf
import kube_meta
from kube_dra_common import (as_dict, as_list, as_str, check_device_name,
                             check_driver_name, check_immutable,
                             check_pool_name, check_qualified_attr_name,
                             check_unique_names)
import kube_dra_common as common

_ATTR_KINDS = ("bool", "int", "string", "version")


class SliceRules:
  """The ResourceSlice checks of one Kubernetes minor release."""

  def __init__(self, kube_minor):
    self.minor = kube_minor
    self.max_devices = 128
    self.max_devices_advanced = 64 if kube_minor >= 35 else 128
    self.max_taints = 16 if kube_minor >= 35 else 4
    self.effects = taint_effects(kube_minor)

  def check_slice(self, obj, old):
    """Errors of a ResourceSlice (old: the stored one on update, or None)."""
    errs = []
    kube_meta.check_object_meta(errs, obj.get("metadata"), namespaced=False)
    spec = as_dict(obj.get("spec"))
    driver = as_str(spec.get("driver")) or ""
    check_driver_name(errs, "spec.driver", driver)
    pool = as_dict(spec.get("pool"))
    check_pool_name(errs, "spec.pool.name", as_str(pool.get("name")) or "")
    count = pool.get("resourceSliceCount")
    if not isinstance(count, int) or count <= 0:
      kf.invalid(errs, "spec.pool.resourceSliceCount", count,
                 "must be greater than zero")
    generation = pool.get("generation")
    if isinstance(generation, int) and generation < 0:
      kf.invalid(errs, "spec.pool.generation", generation,
                 "must be greater than or equal to zero")
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
    check_device_name(errs, path + ".name", as_str(device.get("name")) or "")
    attributes = as_dict(device.get("attributes"))
    capacity = as_dict(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > common.ATTRS_AND_CAPS_MAX:
      kf.invalid(errs, path, total, "the total number of attributes and "
                 "capacities must not exceed %d" % common.ATTRS_AND_CAPS_MAX)
    for name, attribute in attributes.items():
      apath = "%s.attributes[%s]" % (path, name)
      check_qualified_attr_name(errs, apath, name)
      self._check_attribute(errs, apath, as_dict(attribute))
    for name, cap in capacity.items():
      cpath = "%s.capacity[%s]" % (path, name)
      check_qualified_attr_name(errs, cpath, name)
      value = as_dict(cap).get("value")
      if value is None:
        kf.required(errs, cpath + ".value")
      elif not kf.is_quantity(value):
        kf.invalid(errs, cpath + ".value", value, "must be a quantity")
      if as_dict(cap).get("requestPolicy") is not None and \
          device.get("allowMultipleAllocations") is not True:
        kf.forbidden(errs, cpath + ".requestPolicy",
                     "allowMultipleAllocations must be true")
    taints = as_list(device.get("taints"))
    if len(taints) > self.max_taints:
      kf.too_many(errs, path + ".taints", len(taints), self.max_taints)
    else:
      for j, taint in enumerate(taints):
        self.check_taint(errs, "%s.taints[%d]" % (path, j), as_dict(taint))
    self._check_consumes_counters(errs, path + ".consumesCounters",
                                  as_list(device.get("consumesCounters")))
    self._check_device_node(errs, path, device, per_device)

  def _check_attribute(self, errs, path, attribute):
    kinds = [k for k in _ATTR_KINDS if attribute.get(k) is not None]
    string = as_str(attribute.get("string"))
    if string is not None and len(string) > common.ATTR_VALUE_MAX:
      kf.too_long(errs, path + ".string", common.ATTR_VALUE_MAX)
    version = as_str(attribute.get("version"))
    if version is not None:
      if not kf.is_semver(version):
        kf.invalid(errs, path + ".version", version,
                   "must be a string compatible with semver.org spec 2.0.0")
      if len(version) > common.ATTR_VALUE_MAX:
        kf.too_long(errs, path + ".version", common.ATTR_VALUE_MAX)
    if len(kinds) != 1:
      kf.invalid(errs, path, attribute if kinds else "",
                 "exactly one value must be specified")

  def check_taint(self, errs, path, taint):
    """A DeviceTaint: label-key key, label-value value, a known effect."""
    key = as_str(taint.get("key")) or ""
    if not key:
      kf.required(errs, path + ".key")
    else:
      kf.check_qualified_name(errs, path + ".key", key)
    value = as_str(taint.get("value"))
    if value:
      kf.check_label_value(errs, path + ".value", value)
    effect = as_str(taint.get("effect")) or ""
    if not effect:
      kf.required(errs, path + ".effect")
    elif effect not in self.effects:
      kf.not_supported(errs, path + ".effect", effect, self.effects)

  def _check_consumes_counters(self, errs, path, consumptions):
    check_unique_names(errs, consumptions, path, key="counterSet",
                       check=kf.check_dns_label)
    for i, consumption in enumerate(consumptions):
      counters = as_dict(as_dict(consumption).get("counters"))
      if not counters:
        kf.required(errs, "%s[%d].counters" % (path, i))
      self._check_counters(errs, "%s[%d].counters" % (path, i), counters)

  def _check_counters(self, errs, path, counters):
    for name, counter in counters.items():
      kf.check_dns_label(errs, path, name)
      value = as_dict(counter).get("value")
      if value is not None and not kf.is_quantity(value):
        kf.invalid(errs, "%s[%s].value" % (path, name), value,
                   "must be a quantity")

  def _check_shared_counters(self, errs, sets):
    path = "spec.sharedCounters"
    if self.minor >= 35 and len(sets) > common.COUNTER_SETS_MAX:
      kf.too_many(errs, path, len(sets), common.COUNTER_SETS_MAX)
      return
    total = sum(len(as_dict(as_dict(s).get("counters"))) for s in sets)
    if self.minor < 35 and total > common.COUNTERS_MAX:
      kf.invalid(errs, path, total, "the total number of shared counters must "
                 "not exceed %d" % common.COUNTERS_MAX)
    check_unique_names(errs, sets, path, check=kf.check_dns_label)
    for i, counter_set in enumerate(sets):
      counters = as_dict(as_dict(counter_set).get("counters"))
      cpath = "%s[%d].counters" % (path, i)
      if not counters:
        kf.required(errs, cpath)
      elif self.minor >= 35 and len(counters) > common.COUNTERS_MAX:
        kf.too_many(errs, cpath, len(counters), common.COUNTERS_MAX)
      self._check_counters(errs, cpath, counters)

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



def taint_effects(kube_minor):
  """The taint effects the release accepts."""
  if kube_minor >= 35:
    return ("NoExecute", "NoSchedule", "None")
  return ("NoExecute", "NoSchedule")
