#!/usr/bin/python3
"""The emulator's NodeFeature kind (kube_nodefeature.py, NFD's CRD).

Table-driven: a valid NodeFeature, as NVIDIA's GFD writes it, is stored;
each case breaks one thing and must be refused (422) naming the field.
Also: the kind's URLs route, and the Kind's apiVersion is v1alpha1.
"""

import copy
import os
import sys
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import kube_api
import kube_discovery
import kube_dra_rules
import kube_store

NODE = "node-1"


def node_feature():
  return {
      "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
      "kind": "NodeFeature",
      "metadata": {
          "name": "nvidia-features-for-" + NODE,
          "labels": {"nfd.node.kubernetes.io/node-name": NODE},
          "ownerReferences": [{"apiVersion": "v1", "kind": "Node",
                               "name": NODE, "uid": "u-1"}],
      },
      "spec": {
          "features": {"flags": {}, "attributes": {}, "instances": {}},
          "labels": {"nvidia.com/gpu.count": "8"},
      },
  }


def _set(path, value):
  def mutate(obj):
    target = obj
    for key in path[:-1]:
      target = target[key]
    target[path[-1]] = value
  return mutate


def _drop(path):
  def mutate(obj):
    target = obj
    for key in path[:-1]:
      target = target[key]
    del target[path[-1]]
  return mutate


# (name, mutation, text the message must contain)
CASES = [
    ("no spec", _drop(["spec"]), "spec"),
    ("label value not a string", _set(["spec", "labels", "a"], 1),
     "spec.labels"),
    ("unknown spec field", _set(["spec", "label"], {}), "spec"),
    ("flag set without elements",
     _set(["spec", "features", "flags", "f"], {}), "elements"),
    ("instance without attributes",
     _set(["spec", "features", "instances", "i"], {"elements": [{}]}),
     "attributes"),
    ("bad name", _set(["metadata", "name"], "Bad_Name"), "metadata.name"),
    ("bad label key",
     _set(["metadata", "labels"], {"a b": "x"}), "metadata.labels"),
    ("apiVersion v1", _set(["apiVersion"], "nfd.k8s-sigs.io/v1"),
     "apiVersion"),
]


class NodeFeatureTest(unittest.TestCase):

  def setUp(self):
    self.api = kube_api.Api(kube_store.Store(), None,
                            kube_dra_rules.DraRules(34))
    self.kind = kube_api.KINDS["nodefeatures"]

  def test_kind(self):
    self.assertEqual(self.kind.api_version, "nfd.k8s-sigs.io/v1alpha1")
    self.assertTrue(self.kind.namespaced)
    self.assertEqual(
        kube_discovery.route(
            "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/gpu/nodefeatures/x"),
        ("nodefeatures", "gpu", "x", None))
    self.assertIsNone(kube_discovery.route(
        "/apis/nfd.k8s-sigs.io/v1/namespaces/gpu/nodefeatures/x"))
    # The other kinds route as before.
    self.assertEqual(
        kube_discovery.route("/apis/resource.k8s.io/v1/resourceslices"),
        ("resourceslices", None, None, None))

  def test_valid_is_stored_and_updated(self):
    made = self.api.create(self.kind, "gpu", node_feature())
    self.assertEqual(made["metadata"]["namespace"], "gpu")
    made["spec"]["labels"]["nvidia.com/gpu.count"] = "4"
    updated = self.api.update(self.kind, "gpu", made["metadata"]["name"],
                              made)
    self.assertEqual(updated["spec"]["labels"]["nvidia.com/gpu.count"], "4")
    # Empty features and labels, as NFD's NewFeatures gives, are fine.
    other = node_feature()
    other["metadata"]["name"] = "other"
    other["spec"] = {"features": {}, "labels": {}}
    self.api.create(self.kind, "gpu", other)

  def test_refused(self):
    for name, mutate, text in CASES:
      with self.subTest(name):
        obj = copy.deepcopy(node_feature())
        mutate(obj)
        with self.assertRaises(kube_store.ApiError) as raised:
          self.api.create(self.kind, "gpu", obj)
        self.assertIn(raised.exception.code, (400, 422))
        self.assertIn(text, str(raised.exception))


if __name__ == "__main__":
  unittest.main()
