"""A small allocator that picks devices for a claim as the scheduler would.

  results, why = allocate(slices, claims, driver, requests, node=None)

Tests use it (through the control call POST /emulator/allocate) to give a
claim devices the way kube-scheduler's structured allocator does for the
simple requests they make, so that what a driver prepares was chosen
under the same rules: only complete pools without problems
(kube_pool_rules) at their highest generation; devices in a fixed order
(slices by their first device's name, numbers compared as numbers, then
devices as each slice lists them: the scheduler's own order is its
informer's, which a test cannot rely on); never a device
another allocated claim holds (a device allowing multiple allocations is
not offered); never a device with a NoSchedule or NoExecute taint; and,
for partitionable devices (KEP-4815), only while every counter the device
consumes has room, counting what the devices of every allocated claim
consume. The selectors it knows are attribute equality: {"type": "mig",
"profile": "1g.10gb"} (an unqualified name is in the driver's domain),
and a device name. Pure; safe from any thread.
"""

import collections

from kube_meta import as_dict, as_list
import kube_pool_rules

_BLOCKING = ("NoSchedule", "NoExecute")


def _attribute(device, driver, name):
  """The value of attribute `name` of `device` (any kind), or None."""
  attrs = as_dict(as_dict(device).get("attributes"))
  keys = [name]
  if "/" not in name:
    keys.append("%s/%s" % (driver, name))
  elif name.startswith(driver + "/"):
    keys.append(name[len(driver) + 1:])
  for key in keys:
    value = as_dict(attrs.get(key))
    for kind in ("string", "int", "bool", "version"):
      if kind in value:
        return value[kind]
  return None


def _matches(device, driver, request):
  if request.get("device") and as_dict(device).get("name") != \
      request["device"]:
    return False
  for name, want in as_dict(request.get("attributes")).items():
    if _attribute(device, driver, name) != want:
      return False
  for taint in as_list(as_dict(device).get("taints")):
    if as_dict(taint).get("effect") in _BLOCKING:
      return False
  return True


def _held(claims, skip_uid):
  """{(driver, pool, device)} of every allocated claim but skip_uid."""
  held = set()
  for c in claims:
    if as_dict(c.get("metadata")).get("uid") == skip_uid:
      continue
    alloc = as_dict(as_dict(c.get("status")).get("allocation"))
    for r in as_list(as_dict(alloc.get("devices")).get("results")):
      r = as_dict(r)
      held.add((r.get("driver"), r.get("pool"), r.get("device")))
  return held


def allocate(slices, claims, driver, requests, node=None, skip_uid=None):
  """(results, "") with one allocation result per device picked, or
  (None, why) when some request cannot be met.

  requests: [{"name": request name, "count": N (default 1), "attributes":
  {name: value}, "device": optional device name}]; node: only pools of
  slices with this spec.nodeName; skip_uid: a claim whose own allocation
  is not counted (allocating it again).
  """
  held = _held(claims, skip_uid)
  usable = []
  for p in kube_pool_rules.pools(slices):
    if p.driver != driver or p.problems:
      continue
    if node is not None and any(
        as_dict(s.get("spec")).get("nodeName") != node for s in p.slices):
      continue
    usable.append(p)
  used = collections.Counter()  # (driver, pool, set, counter) -> value
  for p in usable:
    for dname, device in p.devices.items():
      if (driver, p.name, dname) in held:
        for (cset, counter), value in kube_pool_rules.consumption(
            device).items():
          used[(p.name, cset, counter)] += value
  results = []
  for request in requests:
    want = int(request.get("count", 1))
    got = 0
    for p in usable:
      for dname, device in p.devices.items():
        if got == want:
          break
        if (driver, p.name, dname) in held or not _matches(device, driver,
                                                           request):
          continue
        if as_dict(device).get("allowMultipleAllocations") is True:
          continue
        take = kube_pool_rules.consumption(device)
        if any(used[(p.name, cset, counter)] + value >
               p.counter_sets.get(cset, {}).get(counter, 0)
               for (cset, counter), value in take.items()):
          continue
        for (cset, counter), value in take.items():
          used[(p.name, cset, counter)] += value
        held.add((driver, p.name, dname))
        results.append({"request": request["name"], "driver": driver,
                        "pool": p.name, "device": dname})
        got += 1
    if got < want:
      return None, ("request %s: %d of %d device(s) with %s fit (pools of "
                    "driver %s: %s)" % (
                        request["name"], got, want,
                        dict(as_dict(request.get("attributes")),
                             **({"device": request["device"]}
                                if request.get("device") else {})),
                        driver, [p.name for p in usable] or "none usable"))
  return results, ""
