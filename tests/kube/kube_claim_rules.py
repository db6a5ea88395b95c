"""kube-apiserver's checks of ResourceClaims and DeviceClasses.

  rules = ClaimRules(kube_minor)
  rules.check_claim(obj, old)          # main resource (old: stored or None)
  rules.check_claim_status(obj, old)   # the /status subresource
  rules.check_class(obj, old)          # DeviceClass
  apply_claim_defaults(obj)            # what the server defaults, in place

After pkg/apis/resource/validation: unique request names, exactly one of
exactly/firstAvailable, allocation mode and count, tolerations, selectors
with a CEL member, constraints and configuration referring to the claim's
requests, opaque parameters, the immutable spec; reservedFor only with an
allocation, allocation results naming requests and immutable once set,
device statuses naming allocated devices, unique IPs; a
DeviceClass's extendedResourceName. The checks
of one field (formats, enums, per-field limits) are
kube_dra_common.field_rules, checked with the schema. Each check returns a
list of kube_fields.FieldError. Safe from any thread.
"""

import json
import re

import kube_fields as kf
import kube_meta
import kube_dra_common as common
from kube_dra_common import (check_immutable, check_opaque,
                             check_qualified_attr_name, check_selectors,
                             check_unique_names, taint_effects)
from kube_meta import as_dict, as_list, as_str

_ALLOCATION_MODES = ("All", "ExactCount")
_OPERATORS = ("Equal", "Exists")


def apply_claim_defaults(claim):
  """Fills what the server defaults in a ResourceClaim, in place.

  Requests: allocationMode ExactCount and count 1; tolerations: operator
  Equal. Skips parts of the wrong JSON type.
  """
  devices = as_dict(as_dict(claim.get("spec")).get("devices"))
  for request in as_list(devices.get("requests")):
    request = as_dict(request)
    targets = [as_dict(request.get("exactly"))] if "exactly" in request else []
    targets += [as_dict(s) for s in as_list(request.get("firstAvailable"))]
    for target in targets:
      if target.get("allocationMode") is None:
        target["allocationMode"] = "ExactCount"
      if target.get("allocationMode") == "ExactCount" and \
          target.get("count") is None:
        target["count"] = 1
      for toleration in as_list(target.get("tolerations")):
        if isinstance(toleration, dict) and toleration.get("operator") is None:
          toleration["operator"] = "Equal"


class ClaimRules:
  """The ResourceClaim and DeviceClass checks of one minor release."""

  def __init__(self, kube_minor):
    self.minor = kube_minor
    self.effects = taint_effects(kube_minor)

  def _check_tolerations(self, errs, path, tolerations):
    for i, toleration in enumerate(tolerations):
      tpath = "%s[%d]" % (path, i)
      toleration = as_dict(toleration)
      key = as_str(toleration.get("key")) or ""
      if key:
        kf.check_qualified_name(errs, tpath + ".key", key)
      operator = as_str(toleration.get("operator")) or ""
      value = as_str(toleration.get("value")) or ""
      if operator == "Exists":
        if value:
          kf.invalid(errs, tpath + ".value", value,
                     "must be empty for operator `Exists`")
      elif operator == "Equal":
        kf.check_label_value(errs, tpath + ".value", value)
      elif not operator:
        kf.required(errs, tpath + ".operator")
      else:
        kf.not_supported(errs, tpath + ".operator", operator, _OPERATORS)
      effect = as_str(toleration.get("effect")) or ""
      if effect and effect not in self.effects:
        kf.not_supported(errs, tpath + ".effect", effect, self.effects)

  # ResourceClaim.

  def check_claim(self, obj, old):
    """Errors of a claim's metadata and spec (on update: spec unchanged)."""
    errs = []
    kube_meta.check_object_meta(errs, obj.get("metadata"), namespaced=True)
    if old is not None:
      check_immutable(errs, "spec", obj.get("spec"), old.get("spec"))
      return errs
    devices = as_dict(as_dict(obj.get("spec")).get("devices"))
    path = "spec.devices"
    requests = as_list(devices.get("requests"))
    names = _request_names(requests)
    check_unique_names(errs, requests, path + ".requests")
    for i, request in enumerate(requests):
      self._check_request(errs, "%s.requests[%d]" % (path, i),
                          as_dict(request))
    for i, constraint in enumerate(as_list(devices.get("constraints"))):
      cpath = "%s.constraints[%d]" % (path, i)
      constraint = as_dict(constraint)
      _check_request_refs(errs, cpath + ".requests",
                          as_list(constraint.get("requests")), names)
      fields = [f for f in ("matchAttribute", "distinctAttribute")
                if as_str(constraint.get(f)) and (self.minor >= 36 or
                                                  f == "matchAttribute")]
      if not fields:
        kf.required(errs, cpath + ".matchAttribute")
      elif len(fields) > 1:
        kf.invalid(errs, cpath, None, "exactly one of `matchAttribute` or "
                   "`distinctAttribute` is required, but multiple fields "
                   "are set")
      for field in fields:
        attr = constraint[field]
        check_qualified_attr_name(errs, cpath + "." + field, attr)
        if "/" not in attr:
          kf.invalid(errs, cpath + "." + field, attr, "a fully qualified "
                     "name must be a domain and a name separated by a slash")
    _check_configs(errs, path + ".config", as_list(devices.get("config")),
                   names)
    return errs

  def _check_request(self, errs, path, request):
    exactly = request.get("exactly")
    first = as_list(request.get("firstAvailable"))
    if exactly is None and not first:
      kf.required(errs, path, "exactly one of `exactly` or `firstAvailable` "
                  "is required")
    elif exactly is not None and first:
      kf.invalid(errs, path, None, "exactly one of `exactly` or "
                 "`firstAvailable` is required, but multiple fields are set")
    elif exactly is not None:
      self._check_exact(errs, path + ".exactly", as_dict(exactly))
    else:
      check_unique_names(errs, first, path + ".firstAvailable")
      for i, sub in enumerate(first):
        self._check_exact(errs, "%s.firstAvailable[%d]" % (path, i),
                          as_dict(sub))

  def _check_exact(self, errs, path, request):
    check_selectors(errs, path + ".selectors",
                    as_list(request.get("selectors")))
    mode = request.get("allocationMode")
    count = request.get("count")
    if mode == "All":
      if count not in (None, 0):
        kf.invalid(errs, path + ".count", count,
                   "must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
      if not isinstance(count, int) or count <= 0:
        kf.invalid(errs, path + ".count", count, "must be greater than zero")
    else:
      kf.not_supported(errs, path + ".allocationMode", mode,
                       _ALLOCATION_MODES)
    self._check_tolerations(errs, path + ".tolerations",
                            as_list(request.get("tolerations")))

  def check_claim_status(self, obj, old):
    """Errors of a claim written through /status (old: the stored one)."""
    errs = []
    kube_meta.check_object_meta(errs, obj.get("metadata"), namespaced=True)
    devices = as_dict(as_dict(obj.get("spec")).get("devices"))
    names = _request_names(as_list(devices.get("requests")))
    status = as_dict(obj.get("status"))
    old_status = as_dict(as_dict(old).get("status"))
    allocation = status.get("allocation")
    if as_list(status.get("reservedFor")) and allocation is None:
      kf.forbidden(errs, "status.reservedFor", "may not be specified when "
                   "`allocated` is not set")
    allocated = set()
    if isinstance(allocation, dict):
      results = as_list(as_dict(allocation.get("devices")).get("results"))
      for result in results:
        result = as_dict(result)
        allocated.add((result.get("driver"), result.get("pool"),
                       result.get("device")))
      if old_status.get("allocation") is not None:
        check_immutable(errs, "status.allocation", allocation,
                        old_status["allocation"])
      else:
        self._check_allocation(errs, "status.allocation", allocation, names)
    _check_device_statuses(errs, as_list(status.get("devices")), allocated)
    return errs

  def _check_allocation(self, errs, path, allocation, names):
    devices = as_dict(allocation.get("devices"))
    rpath = path + ".devices.results"
    for i, result in enumerate(as_list(devices.get("results"))):
      result = as_dict(result)
      _check_request_refs(errs, "%s[%d].request" % (rpath, i),
                          [as_str(result.get("request")) or ""], names,
                          index=False)
      self._check_tolerations(errs, "%s[%d].tolerations" % (rpath, i),
                              as_list(result.get("tolerations")))
      _check_share(errs, "%s[%d]" % (rpath, i), result)
    _check_configs(errs, path + ".devices.config",
                   as_list(devices.get("config")), names)
    if isinstance(allocation.get("nodeSelector"), dict):
      kube_meta.check_node_selector(errs, path + ".nodeSelector",
                                    allocation["nodeSelector"])

  # DeviceClass.

  def check_class(self, obj, old):
    """Errors of a DeviceClass."""
    del old  # Selectors are re-checked on update too; that is stricter.
    errs = []
    kube_meta.check_object_meta(errs, obj.get("metadata"), namespaced=False)
    spec = as_dict(obj.get("spec"))
    check_selectors(errs, "spec.selectors", as_list(spec.get("selectors")))
    _check_configs(errs, "spec.config", as_list(spec.get("config")), None)
    name = spec.get("extendedResourceName")
    if isinstance(name, str) and not kf.is_extended_resource_name(name):
      kf.invalid(errs, "spec.extendedResourceName", name,
                 "must be a valid extended resource name")
    return errs


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                   r"[0-9a-f]{12}$")


def _check_share(errs, path, result):
  """1.36: a result's shareID (a lowercase UUID) and consumedCapacity
  (capacity names to quantities)."""
  share = result.get("shareID")
  if isinstance(share, str) and not _UUID.match(share):
    kf.invalid(errs, path + ".shareID", share,
               "must be a lowercase UUID in 8-4-4-4-12 format")
  for name, value in as_dict(result.get("consumedCapacity")).items():
    kf.check_qualified_name(errs, path + ".consumedCapacity", name)
    if not kf.is_quantity(value):
      kf.invalid(errs, "%s.consumedCapacity[%s]" % (path, name), value,
                 "must be a quantity")


def _check_configs(errs, path, configs, names):
  for i, config in enumerate(configs):
    cpath = "%s[%d]" % (path, i)
    config = as_dict(config)
    _check_request_refs(errs, cpath + ".requests",
                        as_list(config.get("requests")), names)
    check_opaque(errs, cpath, config)


def _check_device_statuses(errs, statuses, allocated):
  for i, status in enumerate(statuses):
    path = "status.devices[%d]" % i
    status = as_dict(status)
    key = (status.get("driver"), status.get("pool"), status.get("device"))
    if key not in allocated:
      kf.invalid(errs, path, "/".join(str(k) for k in key),
                 "must be an allocated device in the claim")
    data = status.get("data")
    if data is not None and (not isinstance(data, dict) or
                             len(json.dumps(data)) > common.STATUS_DATA_MAX):
      kf.invalid(errs, path + ".data", "<value omitted>", "must be a valid "
                 "JSON object of at most %d bytes" % common.STATUS_DATA_MAX)
    check_unique_names(errs, as_list(as_dict(status.get("networkData")).get(
        "ips")), path + ".networkData.ips", key=None)


def _request_names(requests):
  """{request name: set of subrequest names} of a claim's requests."""
  names = {}
  for request in requests:
    request = as_dict(request)
    name = as_str(request.get("name"))
    if name is not None:
      names[name] = {as_str(as_dict(s).get("name"))
                     for s in as_list(request.get("firstAvailable"))}
  return names


def _check_request_refs(errs, path, refs, names, index=True):
  """Each ref is a request name or request/subrequest of the claim.

  names None (DeviceClass config) means there are no requests to refer to.
  """
  seen = set()
  for i, ref in enumerate(refs):
    rpath = "%s[%d]" % (path, i) if index else path
    if not isinstance(ref, str):
      continue
    segments = ref.split("/")
    known = names is not None and len(segments) <= 2 and segments[0] in names \
        and (len(segments) == 1 or segments[1] in names[segments[0]])
    if not known:
      kf.invalid(errs, rpath, ref, "must be the name of a request in the "
                 "claim or the name of a request and a subrequest separated "
                 "by '/'")
    if ref in seen:
      kf.duplicate(errs, rpath, ref)
    seen.add(ref)
