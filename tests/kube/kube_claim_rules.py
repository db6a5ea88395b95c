"""kube-apiserver's checks of ResourceClaims and DeviceClasses.

  rules = ClaimRules(kube_minor)
  rules.check_claim(obj, old)          # main resource (old: stored or None)
  rules.check_claim_status(obj, old)   # the /status subresource
  rules.check_class(obj, old)          # DeviceClass
  apply_claim_defaults(obj)            # what the server defaults, in place

After pkg/apis/resource/validation: requests (names, exactly/firstAvailable,
device class, CEL selectors, allocation mode and count, tolerations),
constraints and configuration referring to the claim's requests, the
immutable spec, reservedFor, allocation results and device statuses;
DeviceClass selectors, configuration and extendedResourceName. Each check
returns a list of kube_fields.FieldError. Safe from any thread.
"""

import ipaddress
import json

import kube_fields as kf
import kube_meta
import kube_dra_common as common
from kube_dra_common import (as_dict, as_list, as_str, check_cel_selectors,
                             check_device_name, check_driver_name,
                             check_immutable, check_opaque, check_pool_name,
                             check_qualified_attr_name, check_unique_names)
from kube_slice_rules import taint_effects

_ALLOCATION_MODES = ("All", "ExactCount")
_CONFIG_SOURCES = ("FromClaim", "FromClass")
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

  # Tolerations (claims and allocation results).

  def _check_toleration(self, errs, path, toleration):
    key = as_str(toleration.get("key")) or ""
    if key:
      kf.check_qualified_name(errs, path + ".key", key)
    operator = as_str(toleration.get("operator")) or ""
    value = as_str(toleration.get("value")) or ""
    if operator == "Exists":
      if value:
        kf.invalid(errs, path + ".value", value,
                   "must be empty for operator `Exists`")
    elif operator == "Equal":
      kf.check_label_value(errs, path + ".value", value)
    elif not operator:
      kf.required(errs, path + ".operator")
    else:
      kf.not_supported(errs, path + ".operator", operator, _OPERATORS)
    effect = as_str(toleration.get("effect")) or ""
    if effect and effect not in self.effects:
      kf.not_supported(errs, path + ".effect", effect, self.effects)

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
    if len(requests) > common.REQUESTS_MAX:
      kf.too_many(errs, path + ".requests", len(requests),
                  common.REQUESTS_MAX)
    else:
      check_unique_names(errs, requests, path + ".requests",
                         check=check_device_name)
      for i, request in enumerate(requests):
        self._check_request(errs, "%s.requests[%d]" % (path, i),
                            as_dict(request))
    constraints = as_list(devices.get("constraints"))
    if len(constraints) > common.CONSTRAINTS_MAX:
      kf.too_many(errs, path + ".constraints", len(constraints),
                  common.CONSTRAINTS_MAX)
    for i, constraint in enumerate(constraints[:common.CONSTRAINTS_MAX]):
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
    self._check_configs(errs, path + ".config",
                        as_list(devices.get("config")), names,
                        common.CONFIG_MAX, with_source=False)
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
    elif len(first) > common.SUBREQUESTS_MAX:
      kf.too_many(errs, path + ".firstAvailable", len(first),
                  common.SUBREQUESTS_MAX)
    else:
      check_unique_names(errs, first, path + ".firstAvailable",
                         check=check_device_name)
      for i, sub in enumerate(first):
        self._check_exact(errs, "%s.firstAvailable[%d]" % (path, i),
                          as_dict(sub))

  def _check_exact(self, errs, path, request):
    class_name = as_str(request.get("deviceClassName")) or ""
    if not class_name:
      kf.required(errs, path + ".deviceClassName")
    else:
      kf.check_dns_subdomain(errs, path + ".deviceClassName", class_name)
    check_cel_selectors(errs, path + ".selectors",
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
    for i, toleration in enumerate(as_list(request.get("tolerations"))):
      self._check_toleration(errs, "%s.tolerations[%d]" % (path, i),
                             as_dict(toleration))

  def _check_configs(self, errs, path, configs, names, limit, with_source):
    if len(configs) > limit:
      kf.too_many(errs, path, len(configs), limit)
      return
    for i, config in enumerate(configs):
      cpath = "%s[%d]" % (path, i)
      config = as_dict(config)
      if with_source:
        source = config.get("source")
        if not source:
          kf.required(errs, cpath + ".source")
        elif source not in _CONFIG_SOURCES:
          kf.not_supported(errs, cpath + ".source", source, _CONFIG_SOURCES)
      _check_request_refs(errs, cpath + ".requests",
                          as_list(config.get("requests")), names)
      check_opaque(errs, cpath, config)

  def check_claim_status(self, obj, old):
    """Errors of a claim written through /status (old: the stored one)."""
    errs = []
    kube_meta.check_object_meta(errs, obj.get("metadata"), namespaced=True)
    devices = as_dict(as_dict(obj.get("spec")).get("devices"))
    names = _request_names(as_list(devices.get("requests")))
    status = as_dict(obj.get("status"))
    old_status = as_dict(as_dict(old).get("status"))
    reserved = as_list(status.get("reservedFor"))
    rpath = "status.reservedFor"
    if len(reserved) > common.RESERVED_FOR_MAX:
      kf.too_many(errs, rpath, len(reserved), common.RESERVED_FOR_MAX)
    else:
      for i, ref in enumerate(reserved):
        for field in ("resource", "name", "uid"):
          if not as_dict(ref).get(field):
            kf.required(errs, "%s[%d].%s" % (rpath, i, field))
      check_unique_names(errs, reserved, rpath, key="uid")
    allocation = status.get("allocation")
    if reserved and allocation is None:
      kf.forbidden(errs, rpath, "may not be specified when `allocated` is not "
                   "set")
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
    self._check_device_statuses(errs, as_list(status.get("devices")),
                                allocated)
    return errs

  def _check_allocation(self, errs, path, allocation, names):
    devices = as_dict(allocation.get("devices"))
    results = as_list(devices.get("results"))
    rpath = path + ".devices.results"
    if len(results) > common.RESULTS_MAX:
      kf.too_many(errs, rpath, len(results), common.RESULTS_MAX)
    else:
      for i, result in enumerate(results):
        self._check_result(errs, "%s[%d]" % (rpath, i), as_dict(result),
                           names)
    self._check_configs(errs, path + ".devices.config",
                        as_list(devices.get("config")), names,
                        2 * common.CONFIG_MAX, with_source=True)
    if isinstance(allocation.get("nodeSelector"), dict):
      kube_meta.check_node_selector(errs, path + ".nodeSelector",
                                    allocation["nodeSelector"])

  def _check_result(self, errs, path, result, names):
    request = as_str(result.get("request")) or ""
    _check_request_refs(errs, path + ".request", [request], names,
                        index=False)
    check_driver_name(errs, path + ".driver",
                      as_str(result.get("driver")) or "")
    check_pool_name(errs, path + ".pool", as_str(result.get("pool")) or "")
    check_device_name(errs, path + ".device",
                      as_str(result.get("device")) or "")
    for i, toleration in enumerate(as_list(result.get("tolerations"))):
      self._check_toleration(errs, "%s.tolerations[%d]" % (path, i),
                             as_dict(toleration))

  def _check_device_statuses(self, errs, statuses, allocated):
    seen = set()
    for i, status in enumerate(statuses):
      path = "status.devices[%d]" % i
      status = as_dict(status)
      key = (status.get("driver"), status.get("pool"), status.get("device"))
      check_driver_name(errs, path + ".driver", as_str(key[0]) or "")
      check_pool_name(errs, path + ".pool", as_str(key[1]) or "")
      check_device_name(errs, path + ".device", as_str(key[2]) or "")
      if key not in allocated:
        kf.invalid(errs, path, "/".join(str(k) for k in key),
                   "must be an allocated device in the claim")
      if key in seen:
        kf.duplicate(errs, path, "/".join(str(k) for k in key))
      seen.add(key)
      conditions = as_list(status.get("conditions"))
      if len(conditions) > common.STATUS_CONDITIONS_MAX:
        kf.too_many(errs, path + ".conditions", len(conditions),
                    common.STATUS_CONDITIONS_MAX)
      data = status.get("data")
      if data is not None and (not isinstance(data, dict) or
                               len(json.dumps(data)) > common.STATUS_DATA_MAX):
        kf.invalid(errs, path + ".data", "<value omitted>", "must be a valid "
                   "JSON object of at most %d bytes" % common.STATUS_DATA_MAX)
      _check_network_data(errs, path + ".networkData",
                          as_dict(status.get("networkData")))

  # DeviceClass.

  def check_class(self, obj, old):
    """Errors of a DeviceClass."""
    del old  # Selectors are re-checked on update too; that is stricter.
    errs = []
    kube_meta.check_object_meta(errs, obj.get("metadata"), namespaced=False)
    spec = as_dict(obj.get("spec"))
    check_cel_selectors(errs, "spec.selectors",
                        as_list(spec.get("selectors")))
    self._check_configs(errs, "spec.config", as_list(spec.get("config")),
                        None, common.CONFIG_MAX, with_source=False)
    name = spec.get("extendedResourceName")
    if isinstance(name, str) and not kf.is_extended_resource_name(name):
      kf.invalid(errs, "spec.extendedResourceName", name,
                 "must be a valid extended resource name")
    return errs


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
    if len(segments) > 2:
      kf.invalid(errs, rpath, ref, "must be the name of a request in the "
                 "claim or the name of a request and a subrequest separated "
                 "by '/'")
      continue
    for segment in segments:
      check_device_name(errs, rpath, segment)
    known = names is not None and segments[0] in names and (
        len(segments) == 1 or segments[1] in names[segments[0]])
    if not known:
      kf.invalid(errs, rpath, ref, "must be the name of a request in the "
                 "claim or the name of a request and a subrequest separated "
                 "by '/'")
    if ref in seen:
      kf.duplicate(errs, rpath, ref)
    seen.add(ref)


def _check_network_data(errs, path, data):
  name = as_str(data.get("interfaceName")) or ""
  if len(name) > 256:
    kf.too_long(errs, path + ".interfaceName", 256)
  address = as_str(data.get("hardwareAddress")) or ""
  if len(address) > 128:
    kf.too_long(errs, path + ".hardwareAddress", 128)
  ips = as_list(data.get("ips"))
  if len(ips) > 16:
    kf.too_many(errs, path + ".ips", len(ips), 16)
    return
  for i, ip in enumerate(ips):
    if not isinstance(ip, str):
      continue
    try:
      if "/" not in ip:
        raise ValueError(ip)
      ipaddress.ip_interface(ip)
    except ValueError:
      kf.invalid(errs, "%s.ips[%d]" % (path, i), ip,
                 "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 "
                 "or 2001:db8::1/64)")
  check_unique_names(errs, ips, path + ".ips", key=None)
