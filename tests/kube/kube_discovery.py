"""URL routing, discovery documents and LIST continue tokens.

route(path) parses a resource URL into (plural, namespace, name,
subresource); answer(path, ...) gives the discovery and /version
documents. Pure functions.
"""

import base64
import json

from kube_api import KINDS

_VERBS = ["create", "delete", "deletecollection", "get", "list", "update",
          "watch"]


def _resources(group):
  out = []
  for plural, kind in sorted(KINDS.items()):
    if kind.group != group:
      continue
    out.append({"name": plural, "singularName": kind.name.lower(),
                "namespaced": kind.namespaced, "kind": kind.name,
                "verbs": _VERBS})
    if kind.status:
      out.append({"name": plural + "/status", "singularName": "",
                  "namespaced": kind.namespaced, "kind": kind.name,
                  "verbs": ["get", "update"]})
  return out


def answer(path, kube_minor, port):
  """The discovery or version document at path, or None."""
  path = path.rstrip("/") or "/"
  if path == "/version":
    return {"major": "1", "minor": str(kube_minor),
            "gitVersion": "v1.%d.0" % kube_minor,
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.24.0", "compiler": "gc",
            "platform": "linux/amd64",
            "emulator": "tests/kube/apiserver.py"}
  if path == "/api":
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{
                "clientCIDR": "0.0.0.0/0",
                "serverAddress": "127.0.0.1:%d" % port}]}
  if path == "/api/v1":
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "v1", "resources": _resources("")}
  group = {"name": "resource.k8s.io",
           "versions": [{"groupVersion": "resource.k8s.io/v1",
                         "version": "v1"}],
           "preferredVersion": {"groupVersion": "resource.k8s.io/v1",
                                "version": "v1"}}
  if path == "/apis":
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group]}
  if path == "/apis/resource.k8s.io":
    return dict(group, kind="APIGroup", apiVersion="v1")
  if path == "/apis/resource.k8s.io/v1":
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "resource.k8s.io/v1",
            "resources": _resources("resource.k8s.io")}
  return None


def route(path):
  """(plural, namespace, name, subresource) of a resource URL.

  namespace, name and subresource are None when absent; None if path is
  not a resource URL of a served kind.
  """
  parts = [p for p in path.split("/") if p]
  if parts[:2] == ["api", "v1"]:
    group, version, rest = "", "v1", parts[2:]
  elif parts[:1] == ["apis"] and len(parts) >= 3:
    group, version, rest = parts[1], parts[2], parts[3:]
  else:
    return None
  namespace = None
  if rest[:1] == ["namespaces"] and len(rest) >= 3:
    namespace, rest = rest[1], rest[2:]
  if not rest or len(rest) > 3:
    return None
  kind = KINDS.get(rest[0])
  if kind is None or kind.group != group or kind.version != version:
    return None
  if namespace is not None and not kind.namespaced:
    return None
  name = rest[1] if len(rest) > 1 else None
  sub = rest[2] if len(rest) > 2 else None
  return rest[0], namespace, name, sub


def key_of(obj):
  """"namespace/name" of an object: the order of LIST and continue."""
  meta = obj.get("metadata") or {}
  return "%s/%s" % (meta.get("namespace") or "", meta.get("name") or "")


def encode_continue(rv, last_key):
  """A continue token resuming after last_key."""
  raw = json.dumps({"rv": rv, "start": last_key}).encode()
  return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token):
  """The last key of the previous page, or None (ValueError if bad)."""
  if not token:
    return None
  try:
    return json.loads(base64.urlsafe_b64decode(token.encode()))["start"]
  except (ValueError, KeyError, TypeError):
    raise ValueError("invalid continue token") from None
