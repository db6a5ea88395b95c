"""NFD's NodeFeature (nfd.k8s-sigs.io/v1alpha1) in the API server emulator.

  errs = check(obj)   # list of kube_fields.FieldError

The kind is a custom resource: the real API server checks it against the
openAPIV3Schema of its CustomResourceDefinition (nfd_nodefeature_crd.yaml,
NFD's own CRD, source named there) and checks metadata as for any object.
Here unknown fields are refused rather than pruned, so that a misspelt
field fails a test instead of vanishing.
"""

import os

import yaml

import kube_meta
import kube_schema

CRD_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "nfd_nodefeature_crd.yaml")
SCHEMA_NAME = "io.k8s-sigs.nfd.v1alpha1.NodeFeature"

_schema = None


def _load():
  """The kube_schema.Schema of the CRD's v1alpha1 (loaded once)."""
  global _schema
  if _schema is None:
    with open(CRD_PATH, encoding="utf-8") as f:
      crd = yaml.safe_load(f)
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    node = versions["v1alpha1"]["schema"]["openAPIV3Schema"]
    _schema = kube_schema.Schema(
        {"components": {"schemas": {SCHEMA_NAME: node}}})
  return _schema


def check(obj):
  """FieldErrors of a NodeFeature: the CRD's schema, then its metadata."""
  errs = _load().check(SCHEMA_NAME, obj)
  if not errs:
    kube_meta.check_object_meta(errs, obj.get("metadata"), True)
  return errs
