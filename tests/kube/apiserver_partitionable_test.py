#!/usr/bin/python3
"""The emulator's checks of partitionable devices (KEP-4815) and its allocator.

With 1.36 (DRAPartitionableDevices beta, on) a slice holds devices or
sharedCounters, at most 8 counter sets of 32 counters, a device consumes
from at most 2 sets and at most 32 counters of each, and a slice of
devices consuming counters holds at most 64; across the slices of a pool
(/emulator/pools, as the scheduler judges it) counter set names are
unique and every consumption names a set and counters the pool defines.
1.34 and 1.35 (the gate off) drop the fields. /emulator/allocate gives a
claim devices as the scheduler would, never past a counter.
"""

import copy
import os
import sys
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from emulator_fixture import DRIVER, Emulator, claim, gpu_device, gpu_slice
from kube_client import KubeError

# An H100's MIG profiles as NVIDIA's DynamicMIG publishes them: (name, GPU
# instance profile ID, slices, memory MiB, placement starts).
PROFILES = [("1g.10gb", 19, 1, 9856, range(7)),
            ("2g.20gb", 14, 2, 20096, (0, 2, 4)),
            ("3g.40gb", 9, 4, 40192, (0, 4)),
            ("7g.80gb", 0, 8, 80384, (0,))]


def counter_set(gpu):
  counters = {"memory": {"value": "80384Mi"},
              "multiprocessors": {"value": "132"}}
  for i in range(8):
    counters["memory-slice-%d" % i] = {"value": "1"}
  return {"name": "gpu-%d-counter-set" % gpu, "counters": counters}


def placement(gpu, profile, profile_id, size, mib, start):
  counters = {"memory": {"value": "%dMi" % mib},
              "multiprocessors": {"value": str(16 * size + (4 if size == 8
                                                            else 0))}}
  for i in range(start, start + size):
    counters["memory-slice-%d" % i] = {"value": "1"}
  return {"name": "gpu-%d-mig-%s-%d-%d" % (gpu, profile.replace(".", ""),
                                           profile_id, start),
          "attributes": {"type": {"string": "mig"},
                         "profile": {"string": profile}},
          "consumesCounters": [{"counterSet": "gpu-%d-counter-set" % gpu,
                                "counters": counters}]}


def gpu_devices(gpu):
  whole = gpu_device(gpu, taint=False)
  whole["consumesCounters"] = [{"counterSet": "gpu-%d-counter-set" % gpu,
                                "counters": counter_set(gpu)["counters"]}]
  out = [whole]
  for profile, pid, size, mib, starts in PROFILES:
    out += [placement(gpu, profile, pid, size, mib, s) for s in starts]
  return out


def slices(node, gpus=2):
  """The pool of `gpus` partitionable GPUs: a slice of counters, then a
  slice of devices per GPU."""
  count = 1 + gpus
  out = [gpu_slice(node, devices=0, taint=False, name="%s-counters" % node)]
  del out[0]["spec"]["devices"]
  out[0]["spec"]["sharedCounters"] = [counter_set(g) for g in range(gpus)]
  for g in range(gpus):
    s = gpu_slice(node, devices=0, taint=False, name="%s-gpu-%d" % (node, g))
    s["spec"]["devices"] = gpu_devices(g)
    out.append(s)
  for s in out:
    s["spec"]["pool"]["resourceSliceCount"] = count
  return out


def _many_sets(s):
  s["spec"]["sharedCounters"] = [counter_set(g) for g in range(9)]


def _big_set(s):
  for i in range(8, 40):
    s["spec"]["sharedCounters"][0]["counters"]["memory-slice-%d" % i] = {
        "value": "1"}


def _both(s):
  s["spec"]["devices"] = [gpu_device(0, taint=False)]


def _three_consumptions(s):
  d = s["spec"]["devices"][1]
  for g in (1, 2):
    d["consumesCounters"].append({"counterSet": "gpu-%d-counter-set" % g,
                                  "counters": {"memory": {"value": "1"}}})


def _big_consumption(s):
  counters = s["spec"]["devices"][1]["consumesCounters"][0]["counters"]
  for i in range(40):
    counters["c%d" % i] = {"value": "1"}


def _many_devices(s):
  base = s["spec"]["devices"][1]
  s["spec"]["devices"] = []
  for i in range(65):
    d = copy.deepcopy(base)
    d["name"] = "p%d" % i
    s["spec"]["devices"].append(d)


# (name, slice index, mutation, text the message must hold).
REFUSED = [
    ("devices and counters in one slice", 0, _both,
     "spec: Invalid value: \"\": only one of `sharedCounters` or `devices` "
     "is allowed"),
    ("nine counter sets", 0, _many_sets,
     "spec.sharedCounters: Too many: 9: must have at most 8 items"),
    ("a set of 40 counters", 0, _big_set,
     "spec.sharedCounters[0].counters: Too many: 42: must have at most 32"),
    ("a device consuming from three sets", 1, _three_consumptions,
     "spec.devices[1].consumesCounters: Too many: 3: must have at most 2"),
    ("a consumption of 43 counters", 1, _big_consumption,
     "spec.devices[1].consumesCounters[0].counters: Too many: 43"),
    ("65 devices consuming counters", 1, _many_devices,
     "spec.devices: Too many: 65: must have at most 64 items (devices with "
     "taints or consumesCounters)"),
]


class PartitionableTest(unittest.TestCase):

  @classmethod
  def setUpClass(cls):
    cls.emu = Emulator("--kube-version", "1.36")
    cls.emu.start()
    cls.c = cls.emu.client

  @classmethod
  def tearDownClass(cls):
    cls.emu.stop()

  def setUp(self):
    self.emu.control("DELETE", "violations")
    self.c.delete_collection("resourceslices")
    for c in self.c.list("resourceclaims", namespace="ns")["items"]:
      self.c.delete("resourceclaims", c["metadata"]["name"], namespace="ns")

  def pool(self, node):
    return [p for p in self.emu.control("GET", "pools")
            if p["pool"] == node]

  def test_nvidias_split_pool_is_accepted_and_usable(self):
    for s in slices("n1"):
      created = self.c.create("resourceslices", s)
      self.assertEqual(created["spec"].get("sharedCounters"),
                       s["spec"].get("sharedCounters"))
    self.assertEqual(self.emu.violations(), [])
    [pool] = self.pool("n1")
    self.assertEqual(pool["problems"], [])
    self.assertTrue(pool["complete"])
    self.assertEqual((pool["slices"], pool["counterSets"], pool["devices"]),
                     (3, 2, 2 * 14))

  def test_broken_slices_are_refused(self):
    for name, index, mutate, want in REFUSED:
      with self.subTest(name):
        self.emu.control("DELETE", "violations")
        body = slices("bad")[index]
        body["metadata"]["name"] = "bad-%d" % len(name)
        mutate(body)
        with self.assertRaises(KubeError) as refused:
          self.c.create("resourceslices", body)
        self.assertEqual(refused.exception.code, 422)
        self.assertIn(want, refused.exception.body["message"])
        self.assertEqual(len(self.emu.violations()), 1)

  def test_pool_problems_as_the_scheduler_sees_them(self):
    def broken(mutate):
      pool = slices("p")
      mutate(pool)
      self.c.delete_collection("resourceslices")
      for s in pool:
        self.c.create("resourceslices", s)
      self.assertEqual(self.emu.violations(), [])
      [p] = self.pool("p")
      return p["problems"]

    def drop_set(pool):
      pool[0]["spec"]["sharedCounters"].pop()

    def twice(pool):
      pool[2]["metadata"]["name"] = "p-extra"
      pool[2]["spec"]["devices"] = []
      del pool[2]["spec"]["devices"]
      pool[2]["spec"]["sharedCounters"] = [counter_set(0)]

    def unknown_counter(pool):
      pool[1]["spec"]["devices"][3]["consumesCounters"][0]["counters"][
          "memory-slice-9"] = {"value": "1"}

    def too_much(pool):
      pool[1]["spec"]["devices"][3]["consumesCounters"][0]["counters"][
          "memory"] = {"value": "81Gi"}

    def missing_slice(pool):
      pool.pop()

    self.assertEqual(broken(lambda pool: None), [])
    self.assertIn("device gpu-1 consumes counter set gpu-1-counter-set, "
                  "which the pool does not define", broken(drop_set))
    self.assertIn("counter set gpu-0-counter-set is defined twice in the "
                  "pool (again in slice p-extra)", broken(twice))
    self.assertIn("device gpu-0-mig-1g10gb-19-2 consumes counter "
                  "memory-slice-9, which counter set gpu-0-counter-set does "
                  "not have", broken(unknown_counter))
    self.assertIn("device gpu-0-mig-1g10gb-19-2 consumes 86973087744 of "
                  "counter memory of set gpu-0-counter-set, which has "
                  "84288733184", broken(too_much))
    self.assertIn("incomplete: 2 of 3 slices of generation 1",
                  broken(missing_slice))

  def allocate(self, name, requests):
    self.c.create("resourceclaims", claim(name, "ns"), namespace="ns")
    return self.emu.control("POST", "allocate", {
        "namespace": "ns", "name": name, "driver": DRIVER,
        "requests": requests})

  def test_allocation_respects_counters(self):
    for s in slices("a", gpus=1):
      self.c.create("resourceslices", s)
    # 3g.40gb at 0 and at 4: the GPU is full, the whole GPU and 1g.10gb
    # no longer fit.
    got = []
    for i in range(2):
      done = self.allocate("c%d" % i, [{"name": "gpu", "attributes": {
          "profile": "3g.40gb"}}])
      got += [r["device"] for r in done["status"]["allocation"]["devices"]
              ["results"]]
    self.assertEqual(got, ["gpu-0-mig-3g40gb-9-0", "gpu-0-mig-3g40gb-9-4"])
    for n, want in (("x1", {"profile": "1g.10gb"}), ("x2", {"type": "gpu"})):
      with self.assertRaises(KubeError) as refused:
        self.allocate(n, [{"name": "gpu", "attributes": want}])
      self.assertEqual(refused.exception.code, 409)
      self.assertIn("0 of 1 device(s)", refused.exception.body["error"])
    # Freeing one 3g.40gb makes room for four 1g.10gb at slices 0-3 (a
    # 1g.10gb takes one slice; 7 placements, the last at slice 6).
    self.c.delete("resourceclaims", "c0", namespace="ns")
    done = self.allocate("y", [{"name": "gpu", "count": 4, "attributes": {
        "profile": "1g.10gb"}}])
    self.assertEqual([r["device"] for r in done["status"]["allocation"]
                      ["devices"]["results"]],
                     ["gpu-0-mig-1g10gb-19-%d" % i for i in range(4)])
    with self.assertRaises(KubeError):
      self.allocate("z", [{"name": "gpu", "attributes": {
          "profile": "1g.10gb"}}])
    self.assertEqual(self.emu.violations(), [])

  def test_a_tainted_or_named_device(self):
    pool = slices("t", gpus=1)
    pool[1]["spec"]["devices"][0]["taints"] = [{
        "key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]
    for s in pool:
      self.c.create("resourceslices", s)
    with self.assertRaises(KubeError):
      self.allocate("w", [{"name": "gpu", "attributes": {"type": "gpu"}}])
    done = self.allocate("v", [{"name": "gpu",
                                "device": "gpu-0-mig-2g20gb-14-2"}])
    self.assertEqual(done["status"]["allocation"]["devices"]["results"],
                     [{"request": "gpu", "driver": DRIVER, "pool": "t",
                       "device": "gpu-0-mig-2g20gb-14-2"}])


class DroppedTest(unittest.TestCase):

  def test_134_and_135_drop_the_fields(self):
    for version in ("1.34", "1.35"):
      with self.subTest(version), Emulator("--kube-version", version) as emu:
        pool = slices("d", gpus=1)
        counters = emu.client.create("resourceslices", pool[0])
        self.assertNotIn("sharedCounters", counters["spec"])
        devices = emu.client.create("resourceslices", pool[1])
        for device in devices["spec"]["devices"]:
          self.assertNotIn("consumesCounters", device)
        self.assertEqual(emu.violations(), [])


if __name__ == "__main__":
  unittest.main()
