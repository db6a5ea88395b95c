"""kube-apiserver's checks of a resource.k8s.io/v1 ResourceSlice.

SliceRules(kube_minor).check_slice(obj, old) returns the list of
kube_fields.FieldError of a ResourceSlice (old: the stored one on update,
None on create), after pkg/apis/resource/validation of the release:
metadata, the pool's slice count, the node-selection union, immutable
fields, the device count, unique device and counter names, counts of
attributes and counters, one value per attribute, per-device node
selection, with the limits of kube_minor (34, 35 or 36). The checks of one
field (formats, enums, per-field limits) are kube_dra_common.field_rules,
checked with the schema. Safe from any thread.
"""

import kube_fields as kf
import kube_meta
from kube_dra_common import check_immutable, check_unique_names
from kube_meta import as_dict, as_list
import kube_dra_common as common

_ATTR_KINDS = ("bool", "int", "string", "version")


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
    for name, cap in capacity.items():
      if as_dict(cap).get("requestPolicy") is not None and \
          device.get("allowMultipleAllocations") is not True:
        kf.forbidden(errs, "%s.capacity[%s].requestPolicy" % (path, name),
                     "allowMultipleAllocations must be true")
    consumptions = as_list(device.get("consumesCounters"))
    check_unique_names(errs, consumptions, path + ".consumesCounters",
                       key="counterSet")
    for i, consumption in enumerate(consumptions):
      if not as_dict(as_dict(consumption).get("counters")):
        kf.required(errs, "%s.consumesCounters[%d].counters" % (path, i))
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

