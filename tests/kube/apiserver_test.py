#!/usr/bin/python3
"""Tests of the Kubernetes API server emulator (apiserver.py).

Runs the emulator as a subprocess (temporary --dir, port 0, so two runs can
go in parallel) and checks TLS, authentication and the verbs of each kind
here; watches (apiserver_watch_test.py), validation
(apiserver_validation_test.py), faults and the process's life cycle
(apiserver_lifecycle_test.py) are imported and run from here too.
"""

import http.client
import json
import os
import ssl
import sys
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import apiserver_lifecycle_test
import apiserver_validation_test
import apiserver_watch_test
from emulator_fixture import Emulator, claim, device_class, gpu_slice
from kube_client import Client, KubeError

SLICES = "/apis/resource.k8s.io/v1/resourceslices"

class ApiTest(unittest.TestCase):
  """One emulator for the whole class; each test uses its own names."""

  @classmethod
  def setUpClass(cls):
    cls.emu = Emulator()
    cls.emu.start()
    cls.c = cls.emu.client

  @classmethod
  def tearDownClass(cls):
    cls.emu.__exit__(None, None, None)

  def test_tls_with_generated_ca(self):
    ctx = ssl.create_default_context(cafile=self.emu.info["ca"])
    for host in ("127.0.0.1", "localhost"):
      conn = http.client.HTTPSConnection(host, self.emu.port, context=ctx,
                                         timeout=10)
      conn.request("GET", "/healthz")
      self.assertEqual(conn.getresponse().read(), b"ok")
      conn.close()
    untrusting = ssl.create_default_context()
    conn = http.client.HTTPSConnection("127.0.0.1", self.emu.port,
                                       context=untrusting, timeout=10)
    with self.assertRaises(ssl.SSLCertVerificationError):
      conn.request("GET", "/healthz")
    conn.close()
    with open(os.path.join(self.emu.dir, "kubeconfig-inline"),
              encoding="utf-8") as f:
      self.assertIn("certificate-authority-data", f.read())
    with Client.from_kubeconfig(os.path.join(self.emu.dir,
                                             "kubeconfig-inline")) as inline:
      self.assertEqual(inline.request("GET", "/version")[0], 200)

  def test_unauthorized(self):
    for token in (None, "wrong"):
      with Client("https://127.0.0.1:%d" % self.emu.port,
                  ca_file=self.emu.info["ca"], token=token) as c:
        code, body = c.request("GET", SLICES)
      self.assertEqual(code, 401)
      self.assertEqual((body["kind"], body["reason"], body["code"]),
                       ("Status", "Unauthorized", 401))

  def test_version_and_discovery(self):
    code, version = self.c.request("GET", "/version")
    self.assertEqual((code, version["major"], version["minor"]),
                     (200, "1", "35"))
    _, resources = self.c.request("GET", "/apis/resource.k8s.io/v1")
    self.assertEqual(resources["kind"], "APIResourceList")
    names = {r["name"] for r in resources["resources"]}
    self.assertLessEqual({"resourceslices", "deviceclasses", "resourceclaims",
                          "resourceclaims/status"}, names)

  def test_node_crud(self):
    node = self.c.create("nodes", {"metadata": {"name": "crud-node",
                                                "labels": {"a": "1"}}})
    meta = node["metadata"]
    self.assertEqual((node["kind"], node["apiVersion"]), ("Node", "v1"))
    self.assertEqual(len(meta["uid"]), 36)
    self.assertEqual(meta["generation"], 1)
    self.assertTrue(meta["creationTimestamp"].endswith("Z"))
    got = self.c.get("nodes", "crud-node")
    self.assertEqual(got, node)
    listed = self.c.list("nodes", label_selector="a=1")
    self.assertEqual(listed["kind"], "NodeList")
    self.assertEqual([i["metadata"]["name"] for i in listed["items"]],
                     ["crud-node"])
    self.assertNotIn("kind", listed["items"][0])
    node["metadata"]["labels"]["a"] = "2"
    updated = self.c.update("nodes", node)
    self.assertGreater(int(updated["metadata"]["resourceVersion"]),
                       int(meta["resourceVersion"]))
    self.assertEqual(self.c.list("nodes", label_selector="a=1")["items"], [])
    self.c.delete("nodes", "crud-node")
    with self.assertRaises(KubeError) as ctx:
      self.c.get("nodes", "crud-node")
    self.assertEqual((ctx.exception.code, ctx.exception.body["reason"]),
                     (404, "NotFound"))

  def test_crud_of_each_kind(self):
    node = {"metadata": {"name": "each-node", "labels": {"each": "x"}}}
    cases = [
        ("nodes", None, lambda n: dict(node, metadata=dict(
            node["metadata"], name=n))),
        ("resourceslices", None, lambda n: gpu_slice(
            "each-node", name=n, devices=2)),
        ("deviceclasses", None, lambda n: device_class(n + ".example.com")),
        ("resourceclaims", "each-ns", lambda n: claim(n, "each-ns")),
    ]
    for resource, ns, make in cases:
      with self.subTest(resource):
        names = []
        for i in range(3):
          obj = make("each-%d" % i)
          obj["metadata"].setdefault("labels", {})["each"] = \
              "yes" if i < 2 else "no"
          created = self.c.create(resource, obj, ns)
          names.append(created["metadata"]["name"])
        got = self.c.get(resource, names[0], ns)
        self.assertEqual(got["metadata"]["name"], names[0])
        got["metadata"]["annotations"] = {"example.com/touched": "1"}
        updated = self.c.update(resource, got, ns)
        self.assertEqual(updated["metadata"]["annotations"],
                         {"example.com/touched": "1"})
        self.assertEqual(updated["metadata"]["generation"], 1)
        listed = self.c.list(resource, ns, label_selector="each=yes")
        self.assertEqual(sorted(i["metadata"]["name"]
                                for i in listed["items"]), names[:2])
        gone = self.c.delete_collection(resource, ns,
                                        label_selector="each=yes")
        self.assertEqual(len(gone["items"]), 2)
        self.c.delete(resource, names[2], ns)
        self.assertEqual(self.c.list(resource, ns,
                                     label_selector="each=no")["items"], [])
    self.assertEqual(self.emu.violations(), [])

  def test_slice_create_generate_name_and_conflicts(self):
    created = self.c.create("resourceslices", gpu_slice("gen-node"))
    name = created["metadata"]["name"]
    self.assertRegex(name, r"^gen-node-gpu\.nvidia\.com-[a-z0-9]{5}$")
    self.assertEqual(created["spec"]["devices"][0]["taints"][0]["value"],
                     "79")
    again = gpu_slice("gen-node", name=name)
    code, body = self.c.request("POST", SLICES, again)
    self.assertEqual((code, body["reason"]), (409, "AlreadyExists"))
    stale = json.loads(json.dumps(created))
    created["spec"]["pool"]["generation"] = 2
    updated = self.c.update("resourceslices", created)
    self.assertEqual(updated["metadata"]["generation"], 2)
    stale["spec"]["pool"]["generation"] = 3
    code, body = self.c.request("PUT", SLICES + "/" + name, stale)
    self.assertEqual((code, body["reason"]), (409, "Conflict"))
    # No resourceVersion: an unconditional update.
    del stale["metadata"]["resourceVersion"]
    code, body = self.c.request("PUT", SLICES + "/" + name, stale)
    self.assertEqual(code, 200)
    self.assertEqual(body["metadata"]["generation"], 3)
    # An update that changes nothing keeps the resourceVersion.
    code, same = self.c.request("PUT", SLICES + "/" + name, body)
    self.assertEqual(same["metadata"]["resourceVersion"],
                     body["metadata"]["resourceVersion"])
    missing = gpu_slice("gen-node", name="no-such-slice")
    code, body = self.c.request("PUT", SLICES + "/no-such-slice", missing)
    self.assertEqual((code, body["reason"]), (404, "NotFound"))
    code, body = self.c.request(
        "DELETE", SLICES + "/" + name,
        {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}})
    self.assertEqual((code, body["reason"]), (409, "Conflict"))
    deleted = self.c.delete("resourceslices", name,
                            uid=created["metadata"]["uid"])
    self.assertEqual(deleted["metadata"]["name"], name)
    self.assertEqual(self.emu.violations(), [])

  def test_delete_collection_with_selectors(self):
    for node in ("dc-a", "dc-a", "dc-b"):
      self.c.create("resourceslices", gpu_slice(node, devices=1))
    selector = "spec.nodeName=dc-a,spec.driver=gpu.nvidia.com"
    self.assertEqual(len(self.c.list("resourceslices",
                                     field_selector=selector)["items"]), 2)
    gone = self.c.delete_collection("resourceslices", field_selector=selector)
    self.assertEqual(gone["kind"], "ResourceSliceList")
    self.assertEqual(len(gone["items"]), 2)
    left = self.c.list("resourceslices", field_selector="spec.nodeName!=dc-a")
    self.assertIn("dc-b", [i["spec"]["nodeName"] for i in left["items"]])
    self.assertNotIn("dc-a", [i["spec"]["nodeName"] for i in left["items"]])
    code, body = self.c.request("GET", SLICES + "?fieldSelector=spec.foo%3Dx")
    self.assertEqual((code, body["reason"]), (400, "BadRequest"))

  def test_list_paging(self):
    for i in range(5):
      self.c.create("nodes", {"metadata": {"name": "page-%d" % i,
                                           "labels": {"paging": "yes"}}})
    names, cont = [], None
    while True:
      path = "/api/v1/nodes?labelSelector=paging%3Dyes&limit=2"
      if cont:
        path += "&continue=" + cont
      code, page = self.c.request("GET", path)
      self.assertEqual(code, 200)
      names += [i["metadata"]["name"] for i in page["items"]]
      cont = page["metadata"].get("continue")
      if not cont:
        break
    self.assertEqual(names, ["page-%d" % i for i in range(5)])

  def test_device_class_crud(self):
    created = self.c.create("deviceclasses", device_class("crud.example.com"))
    self.assertEqual(created["kind"], "DeviceClass")
    created["spec"]["selectors"][0]["cel"]["expression"] = "true"
    updated = self.c.update("deviceclasses", created)
    self.assertEqual(updated["metadata"]["generation"], 2)
    self.assertEqual(len(self.c.list("deviceclasses")["items"]) >= 1, True)
    self.c.delete("deviceclasses", "crud.example.com")
    self.assertEqual(self.c.request(
        "GET", "/apis/resource.k8s.io/v1/deviceclasses/crud.example.com")[0],
                     404)

  def test_claim_status_subresource(self):
    body = claim("status-claim", "ns-1")
    body["status"] = {"reservedFor": [{"resource": "pods", "name": "p",
                                       "uid": "u-1"}]}
    created = self.c.create("resourceclaims", body)
    self.assertNotIn("status", created)
    self.assertEqual(
        created["spec"]["devices"]["requests"][0]["exactly"]["count"], 1)
    created["status"] = {
        "allocation": {"devices": {"results": [{
            "request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-a",
            "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u-1"}]}
    # The main resource ignores status.
    ignored = self.c.update("resourceclaims", created)
    self.assertNotIn("status", ignored)
    created["metadata"]["resourceVersion"] = \
        ignored["metadata"]["resourceVersion"]
    with_status = self.c.update("resourceclaims", created, status=True)
    self.assertEqual(with_status["status"]["allocation"]["devices"]
                     ["results"][0]["device"], "gpu-0")
    self.assertEqual(with_status["metadata"]["generation"], 1)
    # /status changes only status; the main resource keeps it.
    with_status["spec"]["devices"]["requests"][0]["name"] = "other"
    code, body = self.c.request(
        "PUT", "/apis/resource.k8s.io/v1/namespaces/ns-1/resourceclaims/"
        "status-claim", with_status)
    self.assertEqual((code, body["reason"]), (422, "Invalid"))
    self.assertIn("spec: Invalid value", body["message"])
    listed = self.c.list("resourceclaims", "ns-1")
    self.assertEqual(len(listed["items"]), 1)
    self.assertIn("status", listed["items"][0])
    everywhere = self.c.request("GET",
                                "/apis/resource.k8s.io/v1/resourceclaims")[1]
    self.assertIn("status-claim",
                  [i["metadata"]["name"] for i in everywhere["items"]])
    self.emu.control("DELETE", "violations")

  def test_requests_log(self):
    self.c.request("GET", "/api/v1/nodes/log-probe?x=1",
                   headers={"User-Agent": "probe-agent/1.0"})
    log = self.emu.control("GET", "requests")
    mine = [r for r in log if r["path"] == "/api/v1/nodes/log-probe?x=1"]
    self.assertEqual(len(mine), 1)
    self.assertEqual((mine[0]["method"], mine[0]["status"],
                      mine[0]["user_agent"]), ("GET", 404, "probe-agent/1.0"))
    self.assertIsInstance(mine[0]["time"], float)

  def test_managed_fields_name_the_writers(self):
    def write(method, path, body, agent, query=""):
      code, answer = self.c.request(method, path + query, body,
                                    headers={"User-Agent": agent})
      self.assertIn(code, (200, 201), answer)
      return answer

    made = write("POST", SLICES, gpu_slice("mf-node"), "writer-a/1.0 (linux)")
    path = SLICES + "/" + made["metadata"]["name"]
    entries = made["metadata"]["managedFields"]
    self.assertEqual([(e["manager"], e["operation"], e["apiVersion"])
                      for e in entries],
                     [("writer-a", "Update", "resource.k8s.io/v1")])
    self.assertTrue(entries[0]["time"].endswith("Z"))
    # Another writer gets an entry of its own; one sent is ignored.
    made["spec"]["devices"] = made["spec"]["devices"][:1]
    made["metadata"]["managedFields"] = [{"manager": "liar"}]
    second = write("PUT", path, made, "writer-b", "?fieldManager=named-b")
    self.assertEqual([e["manager"] for e in
                      second["metadata"]["managedFields"]],
                     ["writer-a", "named-b"])
    # A write that changes nothing records nothing.
    again = write("PUT", path, second, "writer-c/2")
    self.assertEqual(again["metadata"]["managedFields"],
                     second["metadata"]["managedFields"])
    self.assertEqual(again["metadata"]["resourceVersion"],
                     second["metadata"]["resourceVersion"])
    self.assertEqual(self.emu.violations(), [])

  def test_patch_is_refused(self):
    code, body = self.c.request("PATCH", "/api/v1/nodes/x", {})
    self.assertEqual((code, body["reason"]), (405, "MethodNotAllowed"))


def load_tests(loader, tests, pattern):
  """This module's tests and those of the other apiserver_*_test modules."""
  del pattern
  for module in (apiserver_watch_test, apiserver_validation_test,
                 apiserver_lifecycle_test):
    tests.addTests(loader.loadTestsFromModule(module))
  return tests


if __name__ == "__main__":
  unittest.main()

