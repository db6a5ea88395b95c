#!/usr/bin/python3
"""Validation tests of the Kubernetes API server emulator (apiserver.py).

Run from apiserver_test.py (or alone). Table-driven: each case breaks one
thing in a valid object; the write must be refused with the field named in
the message, and recorded as a violation.
"""

import copy
import http.client
import json
import os
import ssl
import sys
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from emulator_fixture import (Emulator, claim, device_class, gpu_device,
                              gpu_slice)

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"


def _dev(s, i=0):
  return s["spec"]["devices"][i]


def _attrs(s, i=0):
  return _dev(s, i)["attributes"]


def _set(path_fn, key, value):
  def mutate(obj):
    path_fn(obj)[key] = value
  return mutate


def _many_attributes(s):
  for i in range(33 - len(_attrs(s)) - len(_dev(s)["capacity"])):
    _attrs(s)["extra%d" % i] = {"int": i}


def _seventeen_taints(s):
  _dev(s)["taints"] = [{"key": "example.com/t%d" % i, "effect": "NoSchedule"}
                       for i in range(17)]


def _too_many_devices(n, taint):
  def mutate(s):
    s["spec"]["devices"] = [gpu_device(i, taint=taint and i == 0)
                            for i in range(n)]
  return mutate


# (name, mutation of a valid 8-GPU slice, text the message must contain).
SLICE_CASES = [
    ("unknown field", _set(lambda s: _dev(s, 2), "foo", 1),
     "spec.devices[2].foo: Unknown field"),
    ("unknown top-level spec field", _set(lambda s: s["spec"], "bogus", True),
     "spec.bogus: Unknown field"),
    ("wrong type", _set(lambda s: s["spec"]["pool"], "generation", "1"),
     'spec.pool.generation: Invalid value: "1": must be of type integer'),
    ("int attribute as string",
     _set(_attrs, "resource.kubernetes.io/numaNode", {"int": "0"}),
     "spec.devices[0].attributes[resource.kubernetes.io/numaNode].int"),
    ("int64 overflow", _set(_attrs, "big", {"int": 2**63}),
     "spec.devices[0].attributes[big].int"),
    ("129 devices", _too_many_devices(129, taint=False),
     "spec.devices: Too many: 129: must have at most 128 items"),
    ("65 devices with a taint", _too_many_devices(65, taint=True),
     "spec.devices: Too many: 65: must have at most 64 items"),
    ("bad attribute name", _set(_attrs, "bad name", {"int": 1}),
     "spec.devices[0].attributes[bad name]"),
    ("attribute id too long", _set(_attrs, "a" * 33, {"int": 1}),
     "attributes[%s]: Too long" % ("a" * 33)),
    ("attribute domain not a DNS subdomain",
     _set(_attrs, "-bad.example/x", {"int": 1}),
     "spec.devices[0].attributes[-bad.example/x]"),
    ("two value types", _set(lambda s: _attrs(s, 3), "foo",
                             {"int": 1, "string": "x"}),
     "spec.devices[3].attributes[foo]: Invalid value"),
    ("no value", _set(_attrs, "empty", {}),
     "spec.devices[0].attributes[empty]: Invalid value"),
    ("leading-zero version",
     _set(_attrs, "cudaComputeCapability", {"version": "08.0.0"}),
     "attributes[cudaComputeCapability].version: Invalid value: \"08.0.0\""),
    ("two-part version",
     _set(_attrs, "driverVersion", {"version": "550.54"}),
     "attributes[driverVersion].version"),
    ("string too long", _set(_attrs, "productName", {"string": "x" * 65}),
     "attributes[productName].string: Too long"),
    ("nodeName and allNodes", _set(lambda s: s["spec"], "allNodes", True),
     "spec: Invalid value"),
    ("no node selection",
     lambda s: s["spec"].pop("nodeName"), "spec: Required value"),
    ("allNodes false", _set(lambda s: s["spec"], "allNodes", False),
     "spec.allNodes: Invalid value"),
    ("device name not a DNS label", _set(_dev, "name", "GPU_0"),
     "spec.devices[0].name: Invalid value"),
    ("duplicate device names", _set(lambda s: _dev(s, 1), "name", "gpu-0"),
     'spec.devices[1]: Duplicate value: "gpu-0"'),
    ("bad driver name", _set(lambda s: s["spec"], "driver", "gpu_nvidia!"),
     "spec.driver: Invalid value"),
    ("driver too long", _set(lambda s: s["spec"], "driver", "a" * 64),
     "spec.driver: Too long"),
    ("empty pool name", _set(lambda s: s["spec"]["pool"], "name", ""),
     "spec.pool.name: Required value"),
    ("bad pool name path", _set(lambda s: s["spec"]["pool"], "name", "a//b"),
     "spec.pool.name: Invalid value"),
    ("resourceSliceCount 0",
     _set(lambda s: s["spec"]["pool"], "resourceSliceCount", 0),
     "spec.pool.resourceSliceCount: Invalid value: 0"),
    ("negative generation",
     _set(lambda s: s["spec"]["pool"], "generation", -1),
     "spec.pool.generation: Invalid value: -1"),
    ("missing required pool field",
     lambda s: s["spec"]["pool"].pop("resourceSliceCount"),
     "spec.pool.resourceSliceCount: Required value"),
    ("33 attributes and capacities", _many_attributes,
     "spec.devices[0]: Invalid value: 33"),
    ("capacity not a quantity",
     _set(lambda s: _dev(s)["capacity"], "memory", {"value": "80 GiB"}),
     "spec.devices[0].capacity[memory].value: Invalid value"),
    ("taint effect", _set(lambda s: _dev(s)["taints"][0], "effect",
                          "PreferNoSchedule"),
     "spec.devices[0].taints[0].effect: Unsupported value"),
    ("taint key", _set(lambda s: _dev(s)["taints"][0], "key", "-bad"),
     "spec.devices[0].taints[0].key: Invalid value"),
    ("taint value", _set(lambda s: _dev(s)["taints"][0], "value", "a b"),
     "spec.devices[0].taints[0].value: Invalid value"),
    ("taint time", _set(lambda s: _dev(s)["taints"][0], "timeAdded",
                        "yesterday"),
     "spec.devices[0].taints[0].timeAdded: Invalid value"),
    ("17 taints", _seventeen_taints,
     "spec.devices[0].taints: Too many: 17: must have at most 16 items"),
    ("bad object name", _set(lambda s: s["metadata"], "name", "Bad_Name"),
     "metadata.name: Invalid value"),
    ("owner reference without uid",
     lambda s: s["metadata"]["ownerReferences"][0].pop("uid"),
     "metadata.ownerReferences[0].uid: Required value"),
    ("owner reference with empty name",
     _set(lambda s: s["metadata"]["ownerReferences"][0], "name", ""),
     "metadata.ownerReferences[0].name: Invalid value"),
    ("per-device node field without perDeviceNodeSelection",
     _set(_dev, "nodeName", "n"), "spec.devices[0]: Invalid value"),
]

CLAIM_CASES = [
    ("request name", _set(lambda c: c["spec"]["devices"]["requests"][0],
                          "name", "GPU"),
     "spec.devices.requests[0].name: Invalid value"),
    ("duplicate request names",
     lambda c: c["spec"]["devices"]["requests"].append(
         copy.deepcopy(c["spec"]["devices"]["requests"][0])),
     'spec.devices.requests[1]: Duplicate value: "gpu"'),
    ("neither exactly nor firstAvailable",
     lambda c: c["spec"]["devices"]["requests"][0].pop("exactly"),
     "spec.devices.requests[0]: Required value"),
    ("empty CEL expression",
     _set(lambda c: c["spec"]["devices"]["requests"][0]["exactly"],
          "selectors", [{"cel": {"expression": ""}}]),
     "spec.devices.requests[0].exactly.selectors[0].cel.expression"),
    ("count zero",
     _set(lambda c: c["spec"]["devices"]["requests"][0]["exactly"],
          "count", 0), "spec.devices.requests[0].exactly.count"),
    ("constraint on an unknown request",
     _set(lambda c: c["spec"]["devices"], "constraints", [{
         "requests": ["nope"], "matchAttribute": "gpu.nvidia.com/uuid"}]),
     "spec.devices.constraints[0].requests[0]: Invalid value"),
]

_RESULT = {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-a",
           "device": "gpu-0"}
_DEVICE_STATUS = {k: v for k, v in _RESULT.items() if k != "request"}


def _status(results=None, reserved=None):
  status = {}
  if results is not None:
    status["allocation"] = {"devices": {"results": results}}
  if reserved is not None:
    status["reservedFor"] = reserved
  return status


STATUS_CASES = [
    ("result without pool", _status([{k: v for k, v in _RESULT.items()
                                      if k != "pool"}]),
     "status.allocation.devices.results[0].pool: Required value"),
    ("result for an unknown request", _status([dict(_RESULT,
                                                    request="other")]),
     "status.allocation.devices.results[0].request: Invalid value"),
    ("result device not a DNS label", _status([dict(_RESULT,
                                                    device="GPU 0")]),
     "status.allocation.devices.results[0].device: Invalid value"),
    ("reservedFor without allocation",
     _status(reserved=[{"resource": "pods", "name": "p", "uid": "u"}]),
     "status.reservedFor: Forbidden"),
    ("device status twice (x-kubernetes-list-map-keys)",
     dict(_status([_RESULT]), devices=[_DEVICE_STATUS, _DEVICE_STATUS]),
     "status.devices[1]: Duplicate value"),
]

CLASS_CASES = [
    ("empty CEL expression",
     _set(lambda d: d["spec"], "selectors", [{"cel": {"expression": ""}}]),
     "spec.selectors[0].cel.expression: Required value"),
    ("extended resource name without domain",
     _set(lambda d: d["spec"], "extendedResourceName", "gpu"),
     "spec.extendedResourceName: Invalid value"),
    ("extended resource name in kubernetes.io",
     _set(lambda d: d["spec"], "extendedResourceName", "kubernetes.io/gpu"),
     "spec.extendedResourceName: Invalid value"),
]


class ValidationTest(unittest.TestCase):
  """Kube 1.35 rules (the default) on one emulator."""

  @classmethod
  def setUpClass(cls):
    cls.emu = Emulator()
    cls.emu.start()
    cls.c = cls.emu.client

  @classmethod
  def tearDownClass(cls):
    cls.emu.__exit__(None, None, None)

  def setUp(self):
    self.emu.control("DELETE", "violations")

  def _refused(self, method, path, body, want, code=422):
    self.emu.control("DELETE", "violations")
    got, answer = self.c.request(method, path, body)
    self.assertEqual(got, code, answer)
    self.assertEqual(answer["kind"], "Status")
    self.assertIn(want, answer["message"])
    violations = self.emu.violations()
    self.assertEqual(len(violations), 1)
    self.assertEqual(violations[0]["message"], answer["message"])
    self.assertEqual((violations[0]["method"], violations[0]["path"]),
                     (method, path))
    self.assertEqual(violations[0]["object"], body)
    return answer

  def test_valid_gpu_slice_is_accepted(self):
    created = self.c.create("resourceslices", gpu_slice("valid-node"))
    self.assertEqual(len(created["spec"]["devices"]), 8)
    created["spec"]["pool"]["generation"] = 2
    created["spec"]["devices"][1]["taints"] = [
        {"key": "gpu.nvidia.com/gpu-lost", "effect": "NoExecute",
         "timeAdded": "2026-01-02T03:04:05Z"},
        {"key": "gpu.nvidia.com/unmonitored", "effect": "None"}]
    self.c.update("resourceslices", created)
    self.c.create("resourceslices", gpu_slice("valid-node", devices=0))
    self.c.create("resourceslices", gpu_slice("valid-node", devices=64))
    self.c.create("resourceslices", gpu_slice("valid-node", devices=128,
                                              taint=False))
    self.assertEqual(self.emu.violations(), [])

  def test_invalid_slices_are_refused_and_recorded(self):
    for name, mutate, want in SLICE_CASES:
      with self.subTest(name):
        body = gpu_slice("bad-node", name="bad-slice")
        mutate(body)
        answer = self._refused("POST", SLICES, body, want)
        self.assertEqual((answer["reason"], answer["details"]["kind"]),
                         ("Invalid", "ResourceSlice"))
        self.assertTrue(answer["details"]["causes"])

  def test_immutable_slice_fields(self):
    created = self.c.create("resourceslices", gpu_slice("imm-node"))
    for field, value in (("driver", "other.example.com"),
                         ("nodeName", "imm-other")):
      with self.subTest(field):
        body = copy.deepcopy(created)
        body["spec"][field] = value
        self._refused("PUT", SLICES + "/" + created["metadata"]["name"], body,
                      "spec.%s: Invalid value" % field)

  def test_strict_decoding_and_kind_mismatch(self):
    raw = b'{"metadata":{"name":"dup"},"metadata":{"name":"dup"}}'
    conn = http.client.HTTPSConnection(
        "127.0.0.1", self.emu.port, timeout=10,
        context=ssl.create_default_context(cafile=self.emu.info["ca"]))
    conn.request("POST", SLICES, body=raw, headers={
        "Authorization": "Bearer " + self.c.token,
        "Content-Type": "application/json"})
    resp = conn.getresponse()
    self.assertEqual(resp.status, 400)
    self.assertIn(b'duplicate field \\"metadata\\"', resp.read())
    self.assertEqual(len(self.emu.violations()), 1)
    self.emu.control("DELETE", "violations")
    body = gpu_slice("kind-node")
    body["kind"] = "DeviceClass"
    self._refused("POST", SLICES, body, "kind", code=400)
    self.emu.control("DELETE", "violations")
    conn.request("POST", SLICES, body=b"{}", headers={
        "Authorization": "Bearer " + self.c.token})
    resp = conn.getresponse()
    self.assertEqual((resp.status, json.loads(resp.read())["reason"]),
                     (415, "UnsupportedMediaType"))
    self.assertEqual(len(self.emu.violations()), 1)

  def test_invalid_claims_are_refused(self):
    for name, mutate, want in CLAIM_CASES:
      with self.subTest(name):
        body = claim("bad-claim")
        mutate(body)
        self._refused("POST", CLAIMS, body, want)

  def test_invalid_claim_status_is_refused(self):
    created = self.c.create("resourceclaims", claim("status-check"))
    path = CLAIMS + "/status-check/status"
    for name, status, want in STATUS_CASES:
      with self.subTest(name):
        body = dict(created, status=status)
        self._refused("PUT", path, body, want)
    valid = dict(created, status=_status([_RESULT], [
        {"resource": "pods", "name": "p", "uid": "u"}]))
    self.emu.control("DELETE", "violations")
    self.assertEqual(self.c.request("PUT", path, valid)[0], 200)
    self.assertEqual(self.emu.violations(), [])

  def test_invalid_device_classes_are_refused(self):
    for name, mutate, want in CLASS_CASES:
      with self.subTest(name):
        body = device_class("bad.example.com")
        mutate(body)
        self._refused("POST", CLASSES, body, want)


class KubeVersionTest(unittest.TestCase):
  """Rules that differ between releases."""

  def test_kube_134_limits(self):
    with Emulator("--kube-version", "1.34") as emu:
      self.assertEqual(emu.client.request("GET", "/version")[1]["minor"],
                       "34")
      self.assertEqual(emu.client.request(
          "POST", SLICES, gpu_slice("v134", devices=65))[0], 201)
      five = gpu_slice("v134")
      five["spec"]["devices"][0]["taints"] = [
          {"key": "example.com/t%d" % i, "effect": "NoSchedule"}
          for i in range(5)]
      code, body = emu.client.request("POST", SLICES, five)
      self.assertEqual(code, 422)
      self.assertIn("spec.devices[0].taints: Too many: 5: must have at most 4",
                    body["message"])
      none = gpu_slice("v134")
      none["spec"]["devices"][0]["taints"][0]["effect"] = "None"
      code, body = emu.client.request("POST", SLICES, none)
      self.assertEqual(code, 422)
      self.assertIn("taints[0].effect: Unsupported value", body["message"])
      self.assertEqual(len(emu.violations()), 2)

  def test_kube_136_fields(self):
    s = gpu_slice("v136")
    device = s["spec"]["devices"][0]
    device.update(allowMultipleAllocations=True, bindsToNode=True,
                  bindingConditions=["ready"],
                  bindingFailureConditions=["failed"])
    device["capacity"]["memory"]["requestPolicy"] = {
        "default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}
    c = claim("v136")
    c["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {
        "requests": {"memory": "10Gi"}}
    c["spec"]["devices"]["constraints"] = [
        {"requests": ["gpu"], "distinctAttribute": "gpu.nvidia.com/uuid"}]
    # 1.36 tells a device's statuses apart by shareID too.
    shares = [dict(_DEVICE_STATUS, shareID="%d0000000-0000-0000-0000-"
                   "000000000000" % i) for i in (1, 2)]
    with Emulator("--kube-version", "1.36") as emu:
      self.assertEqual(emu.client.request("POST", SLICES, s)[0], 201)
      code, created = emu.client.request("POST", CLAIMS, c)
      self.assertEqual(code, 201)
      created["status"] = dict(_status([_RESULT]), devices=shares)
      self.assertEqual(emu.client.request(
          "PUT", CLAIMS + "/v136/status", created)[0], 200, created)
      self.assertEqual(emu.violations(), [])
      # A share's result: its shareID a lowercase UUID, its consumed
      # capacity quantities by capacity name (allocation is immutable: a
      # claim per case).
      share = dict(_RESULT, shareID="10000000-0000-0000-0000-000000000000",
                   consumedCapacity={"memory": "10Gi"})
      for i, (bad, message) in enumerate((
          ({}, None),
          ({"shareID": "ABC"}, "results[0].shareID: Invalid value: \"ABC\""
           ": must be a lowercase UUID in 8-4-4-4-12 format"),
          ({"consumedCapacity": {"memory": "lots"}},
           "consumedCapacity[memory]: Invalid value: \"lots\""),
          ({"consumedCapacity": {"Bad Name": "1"}}, "consumedCapacity"),
      )):
        one = json.loads(json.dumps(c))
        one["metadata"]["name"] = "share-%d" % i
        code, got = emu.client.request("POST", CLAIMS, one)
        self.assertEqual(code, 201, got)
        got["status"] = _status([dict(share, **bad)])
        code, body = emu.client.request(
            "PUT", CLAIMS + "/share-%d/status" % i, got)
        if message is None:
          self.assertEqual(code, 200, body)
        else:
          self.assertEqual(code, 422, body)
          self.assertIn(message, body["message"])
    with Emulator() as emu:
      # 1.35 drops consumable capacity (its gate is off), and knows none of
      # the binding fields of the older document.
      code, body = emu.client.request("POST", SLICES, s)
      self.assertEqual(code, 422)
      self.assertIn("spec.devices[0].bindsToNode: Unknown field",
                    body["message"])
      self.assertNotIn("allowMultipleAllocations", body["message"])
      self.assertNotIn("requestPolicy", body["message"])

  def test_drop_taints_flag(self):
    with Emulator("--drop-taints", "--kube-version", "1.36") as emu:
      stored = emu.client.create("resourceslices",
                                 gpu_slice("dt", devices=100))
      self.assertTrue(all("taints" not in d
                          for d in stored["spec"]["devices"]))
      self.assertEqual(emu.violations(), [])


if __name__ == "__main__":
  unittest.main()
