#!/usr/bin/python3
"""The emulator's checks of consumable capacity (KEP-5075) in ResourceSlices.

With 1.36 (DRAConsumableCapacity beta, on) allowMultipleAllocations and
capacity[].requestPolicy are kept and checked as validateRequestPolicy of
pkg/apis/resource/validation checks them; with 1.34 and 1.35 (the gate
alpha, off) and with --drop-consumable-capacity they are dropped silently.
NVIDIA's shapes (consumable_shares.go: memory, unlimited, <N>) are
accepted; each broken rule is refused naming the field.
"""

import copy
import os
import sys
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from emulator_fixture import Emulator, gpu_slice
from kube_client import KubeError
import kube_slice_rules

GI80 = "80Gi"


def _range(default, low, high, step):
  return {"default": default,
          "validRange": {"min": low, "max": high, "step": step}}


def shared_slice(node, mode):
  """A slice of 2 GPUs in NVIDIA's consumable shape for mode ("memory",
  "unlimited" or a number of shares)."""
  s = gpu_slice(node, devices=2, taint=False)
  for device in s["spec"]["devices"]:
    device["allowMultipleAllocations"] = True
    memory = device["capacity"]["memory"]
    if mode == "memory":
      memory["requestPolicy"] = _range(GI80, "1Mi", GI80, "1Mi")
    else:
      memory["requestPolicy"] = _range("0", "0", GI80, "1Mi")
    if isinstance(mode, int):
      device["capacity"]["shares"] = {
          "value": str(mode),
          "requestPolicy": _range("1", "1", str(mode), "1")}
  return s


def _policy(s, cap="memory"):
  return s["spec"]["devices"][0]["capacity"][cap]["requestPolicy"]


def _set_range(key, value, cap="memory"):
  def mutate(s):
    _policy(s, cap)["validRange"][key] = value
  return mutate


def _set_policy(key, value):
  def mutate(s):
    _policy(s)[key] = value
  return mutate


def _drop_range(key):
  def mutate(s):
    del _policy(s)["validRange"][key]
  return mutate


def _values(values, default):
  def mutate(s):
    _policy(s).pop("validRange")
    _policy(s)["validValues"] = values
    _policy(s)["default"] = default
  return mutate


_CAP = "spec.devices[0].capacity[memory].requestPolicy"

# (name, mutation of a valid memory-mode slice, text the message must hold).
CASES = [
    ("requestPolicy without allowMultipleAllocations",
     lambda s: s["spec"]["devices"][0].pop("allowMultipleAllocations"),
     _CAP + ": Forbidden: allowMultipleAllocations must be true"),
    ("both policies", _set_policy("validValues", ["1Gi"]),
     _CAP + ': Forbidden: exactly one policy can be specified'),
    ("no default", lambda s: _policy(s).pop("default"),
     _CAP + ".default: Required value"),
    ("no min", _drop_range("min"), _CAP + ".validRange.min: Required value"),
    ("min over the capacity", _set_range("min", "81Gi"),
     _CAP + ".validRange.min: Invalid value"),
    ("default under min", _set_policy("default", "0"),
     "default is less than min: 1Mi"),
    ("max over the capacity", _set_range("max", "81Gi"),
     "max is larger than capacity value"),
    ("default over max", _set_range("max", "40Gi"),
     "default is more than max: 40Gi"),
    ("min over max", _set_range("max", "512Ki"),
     "min is larger than max: 512Ki"),
    ("one step over the capacity", _set_range("step", "80Gi"),
     "one step 81921Mi is larger than capacity value: 80Gi"),
    ("default off the step", _set_policy("default", "1536Ki"),
     "value is not a multiple of a given step (1Mi) from (1Mi)"),
    ("max off the step", _set_range("max", "79999999999"),
     _CAP + ".validRange.step: Invalid value"),
    # NVIDIA's <N> shape with N = 1 is refused: min 1 + step 1 > 1.
    ("one share", lambda s: s["spec"]["devices"][0]["capacity"].update(
        shared_slice("x", 1)["spec"]["devices"][0]["capacity"]),
     "spec.devices[0].capacity[shares].requestPolicy.validRange.step: "
     "Invalid value"),
    ("values unsorted", _values(["2Gi", "1Gi"], "1Gi"),
     _CAP + ".validValues[1]: Invalid value"),
    ("value over the capacity", _values(["1Gi", "81Gi"], "1Gi"),
     "option is larger than capacity value"),
    ("default not a value", _values(["1Gi", "2Gi"], "3Gi"),
     "default value is not valid according to the requestPolicy"),
    ("eleven values", _values(["%dGi" % i for i in range(1, 12)], "1Gi"),
     _CAP + ".validValues: Too many: 11: must have at most 10 items"),
    ("duplicate values", _values(["1Gi", "1024Mi"], "1Gi"),
     _CAP + '.validValues[1]: Duplicate value'),
]


class QuantityTest(unittest.TestCase):

  def test_quantities(self):
    q = kube_slice_rules.quantity
    self.assertEqual(q("80Gi"), 80 * 2**30)
    self.assertEqual(q("1Mi"), 2**20)
    self.assertEqual(q("1.5k"), 1500)
    self.assertEqual(q("1e3"), 1000)
    self.assertEqual(q("500m"), kube_slice_rules.decimal.Decimal("0.5"))
    self.assertEqual(q(4), 4)
    self.assertIsNone(q("80 GiB"))
    self.assertIsNone(q(True))


class SharesTest(unittest.TestCase):

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

  def test_nvidias_shapes_are_accepted_and_kept(self):
    for mode in ("memory", "unlimited", 4, 1024):
      with self.subTest(mode):
        created = self.c.create("resourceslices", shared_slice("n", mode))
        device = created["spec"]["devices"][0]
        self.assertIs(device["allowMultipleAllocations"], True)
        self.assertEqual(device["capacity"]["memory"]["requestPolicy"],
                         shared_slice("n", mode)["spec"]["devices"][0]
                         ["capacity"]["memory"]["requestPolicy"])
    self.assertEqual(self.emu.violations(), [])

  def test_broken_policies_are_refused(self):
    for name, mutate, want in CASES:
      with self.subTest(name):
        self.emu.control("DELETE", "violations")
        body = shared_slice("bad", "memory")
        mutate(body)
        with self.assertRaises(KubeError) as refused:
          self.c.create("resourceslices", body)
        self.assertEqual(refused.exception.code, 422)
        self.assertIn(want, refused.exception.body["message"])
        self.assertEqual(len(self.emu.violations()), 1)


class DroppedTest(unittest.TestCase):

  def _dropped(self, *args):
    with Emulator(*args) as emu:
      created = emu.client.create("resourceslices",
                                  shared_slice("n", 4))
      for device in created["spec"]["devices"]:
        self.assertNotIn("allowMultipleAllocations", device)
        for cap in device["capacity"].values():
          self.assertNotIn("requestPolicy", cap)
        self.assertEqual(device["capacity"]["shares"], {"value": "4"})
      self.assertEqual(emu.violations(), [])

  def test_134_and_135_drop_the_fields(self):
    for version in ("1.34", "1.35"):
      with self.subTest(version):
        self._dropped("--kube-version", version)

  def test_136_without_the_gate(self):
    self._dropped("--kube-version", "1.36", "--drop-consumable-capacity")


if __name__ == "__main__":
  unittest.main()
