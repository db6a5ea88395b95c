"""What a consumer (the scheduler) checks of a pool of ResourceSlices.

The API server checks one slice at a time (kube_slice_rules); what spans
the slices of a pool is judged by whoever reads the pool: the scheduler's
allocator takes only a pool's highest generation, waits for all of its
resourceSliceCount slices, and refuses a pool whose devices or shared
counters (KEP-4815, partitionable devices) do not fit together. This
module states those rules for tests:

  pools(slices) -> [Pool]       every (driver, pool) of the slices
  Pool.problems                 why the scheduler would not use it ([]: ok)

The rules (resource.k8s.io/v1 of 1.36, its API documentation: "The names
of the counter sets must be unique in the ResourcePool"; a device's
consumesCounters "defines a list of references to sharedCounters", "a
single entry per counterSet"; the scheduler allocates a device only while
every counter it consumes has room): device names unique in the pool,
counter set names unique in the pool, every consumesCounters names a set of
the pool and only counters of that set, never more of one than the set
has. Pure functions; safe from any thread.
"""

import collections
import re

from kube_meta import as_dict, as_list
import kube_slice_rules


class Pool:
  """One pool at its highest generation: its slices, devices by name,
  counter sets by name, and its problems."""

  def __init__(self, driver, name):
    self.driver = driver
    self.name = name
    self.generation = None
    self.expected = None  # resourceSliceCount
    self.slices = []
    self.devices = collections.OrderedDict()  # name -> device
    self.counter_sets = collections.OrderedDict()  # name -> {counter: value}
    self.problems = []

  @property
  def complete(self):
    return self.expected is not None and len(self.slices) == self.expected

  def summary(self):
    """A JSON-able description (the control API's answer)."""
    return {"driver": self.driver, "pool": self.name,
            "generation": self.generation,
            "resourceSliceCount": self.expected, "slices": len(self.slices),
            "complete": self.complete, "devices": len(self.devices),
            "counterSets": len(self.counter_sets),
            "problems": list(self.problems)}


def counters_of(counters):
  """{name: whole value} of a counters map ({name: {"value": q}}); a
  counter whose value is not a quantity is left out (the schema reports
  it)."""
  out = {}
  for name, counter in as_dict(counters).items():
    q = kube_slice_rules.quantity(as_dict(counter).get("value"))
    if q is not None:
      out[name] = q
  return out


def natural(name):
  """A sort key of `name` comparing its runs of digits as numbers
  ("gpu-2" before "gpu-10")."""
  return [(0, int(part), "") if part.isdigit() else (1, 0, part)
          for part in re.split(r"(\d+)", name or "")]


def _slice_order(s):
  """Slices of a pool in a fixed order: by their first device's name,
  numbers as numbers (slices of counters first), then by name. The
  scheduler's order is its informer's; tests need one that does not hang
  on the random part of generated names."""
  devices = as_list(as_dict(s.get("spec")).get("devices"))
  first = as_dict(devices[0]).get("name") if devices else ""
  return (natural(first), as_dict(s.get("metadata")).get("name") or "")


def pools(slices):
  """The pools of `slices` (ResourceSlice objects), each at its highest
  generation, with their problems; devices in the order of _slice_order,
  then as each slice lists them."""
  by_pool = collections.OrderedDict()
  for s in sorted(slices, key=_slice_order):
    spec = as_dict(s.get("spec"))
    pool = as_dict(spec.get("pool"))
    key = (spec.get("driver"), pool.get("name"))
    by_pool.setdefault(key, []).append(s)
  out = []
  for (driver, name), members in by_pool.items():
    p = Pool(driver, name)
    generations = [as_dict(as_dict(s.get("spec")).get("pool"))
                   .get("generation") or 0 for s in members]
    p.generation = max(generations)
    p.slices = [s for s, g in zip(members, generations) if g == p.generation]
    counts = {as_dict(as_dict(s.get("spec")).get("pool"))
              .get("resourceSliceCount") for s in p.slices}
    if len(counts) != 1:
      p.problems.append("slices of generation %d disagree on "
                        "resourceSliceCount: %s" %
                        (p.generation, sorted(counts, key=str)))
    else:
      p.expected = counts.pop()
      if not p.complete:
        p.problems.append("incomplete: %d of %s slices of generation %d" %
                          (len(p.slices), p.expected, p.generation))
    _gather(p)
    _check_consumption(p)
    out.append(p)
  return out


def _gather(p):
  for s in p.slices:
    sname = as_dict(s.get("metadata")).get("name")
    spec = as_dict(s.get("spec"))
    for counter_set in as_list(spec.get("sharedCounters")):
      cname = as_dict(counter_set).get("name")
      if cname in p.counter_sets:
        p.problems.append("counter set %s is defined twice in the pool "
                          "(again in slice %s)" % (cname, sname))
        continue
      p.counter_sets[cname] = counters_of(as_dict(counter_set)
                                          .get("counters"))
    for device in as_list(spec.get("devices")):
      dname = as_dict(device).get("name")
      if dname in p.devices:
        p.problems.append("device %s is listed twice in the pool (again in "
                          "slice %s)" % (dname, sname))
        continue
      p.devices[dname] = device


def _check_consumption(p):
  for dname, device in p.devices.items():
    for consumption in as_list(as_dict(device).get("consumesCounters")):
      cname = as_dict(consumption).get("counterSet")
      counter_set = p.counter_sets.get(cname)
      if counter_set is None:
        p.problems.append("device %s consumes counter set %s, which the "
                          "pool does not define" % (dname, cname))
        continue
      for counter, value in counters_of(
          as_dict(consumption).get("counters")).items():
        if counter not in counter_set:
          p.problems.append("device %s consumes counter %s, which counter "
                            "set %s does not have" % (dname, counter, cname))
        elif value > counter_set[counter]:
          p.problems.append("device %s consumes %s of counter %s of set %s, "
                            "which has %s" % (dname, value, counter, cname,
                                              counter_set[counter]))


def consumption(device):
  """{(counter set, counter): value} a device takes when allocated."""
  out = collections.Counter()
  for c in as_list(as_dict(device).get("consumesCounters")):
    cname = as_dict(c).get("counterSet")
    for counter, value in counters_of(as_dict(c).get("counters")).items():
      out[(cname, counter)] += value
  return out
