"""The verbs of the emulated API on top of kube_store.Store.

  api = Api(store, schema_or_None, DraRules(35))
  api.create(kind, namespace, body)            -> stored object
  api.update(kind, namespace, name, body, status=False)
  api.get / list / delete / delete_collection

KINDS describes each kind served (Node, ResourceSlice, DeviceClass,
ResourceClaim, and NFD's NodeFeature, checked against NFD's CRD:
kube_nodefeature.py). Writes of the resource.k8s.io kinds are checked
against the OpenAPI schema (when given) and the API server's rules; a bad
object raises
ApiError(422, Invalid, violation=True) whose message lists every problem.
Other failures raise ApiError with kube-apiserver's code and reason. The
server-set metadata (uid, resourceVersion, creationTimestamp, generation)
is filled in here, and metadata.managedFields: one Update entry per
manager (and subresource) with the time of its last write that changed the
object; fieldsType/fieldsV1 (which fields each manager owns) are left out,
and managedFields sent in a body are ignored. Thread-safe: every method
takes store.cond.
"""

import datetime
import json
import random
import uuid

import kube_claim_rules
import kube_meta
import kube_nodefeature
from kube_selectors import field_getters
from kube_store import ApiError

_GROUP = "resource.k8s.io"
# The alphabet of generateName suffixes (lowercase alphanumerics without
# vowels and look-alikes, as the real server's).
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


class Kind:
  """A kind served by the emulator."""

  def __init__(self, name, plural, group, namespaced, schema, fields,
               status=False, version="v1"):
    self.name = name
    self.plural = plural
    self.group = group
    self.version = version
    self.api_version = group + "/" + version if group else version
    self.namespaced = namespaced
    self.schema = schema        # components.schemas name, or None
    self.fields = field_getters("metadata.name", "metadata.namespace",
                                *fields)
    self.status = status        # has a /status subresource
    self.resource = plural + ("." + group if group else "")

  def not_found(self, name):
    """The 404 NotFound ApiError for an object of this kind."""
    return ApiError(404, '%s "%s" not found' % (self.resource, name),
                    details={"name": name, "group": self.group,
                             "kind": self.plural})


KINDS = {k.plural: k for k in (
    Kind("Node", "nodes", "", False, None, ()),
    Kind("ResourceSlice", "resourceslices", _GROUP, False,
         "io.k8s.api.resource.v1.ResourceSlice",
         ("spec.nodeName", "spec.driver", "spec.pool.name")),
    Kind("DeviceClass", "deviceclasses", _GROUP, False,
         "io.k8s.api.resource.v1.DeviceClass", ()),
    Kind("ResourceClaim", "resourceclaims", _GROUP, True,
         "io.k8s.api.resource.v1.ResourceClaim", (), status=True),
    # NFD's custom resource, checked against NFD's CRD (kube_nodefeature).
    Kind("NodeFeature", "nodefeatures", "nfd.k8s-sigs.io", True, None, (),
         version="v1alpha1"),
)}


def now_rfc3339():
  """The current UTC time as metav1.Time writes it."""
  return datetime.datetime.now(datetime.timezone.utc).strftime(
      "%Y-%m-%dT%H:%M:%SZ")


# kube-apiserver's limit on a field manager's name.
_MAX_MANAGER = 128


def manager_name(field_manager, user_agent):
  """The manager kube-apiserver records for a write: the fieldManager query
  parameter, else the User-Agent up to its first '/', cut to 128 chars."""
  return (field_manager or (user_agent or "").split("/")[0])[:_MAX_MANAGER]


def _record_manager(meta, manager, api_version, subresource=""):
  """Gives manager's Update entry (of subresource) in meta's managedFields
  the current time; the other entries stay."""
  if not manager:
    return
  entries = [e for e in meta.get("managedFields") or []
             if not (e.get("manager") == manager and
                     e.get("operation") == "Update" and
                     e.get("subresource", "") == subresource)]
  entry = {"manager": manager, "operation": "Update",
           "apiVersion": api_version, "time": now_rfc3339()}
  if subresource:
    entry["subresource"] = subresource
  entries.append(entry)
  meta["managedFields"] = entries


def _object_key(obj):
  meta = obj.get("metadata") or {}
  return meta.get("namespace") or "", meta.get("name") or ""


class Api:
  """The verbs; see the module docstring."""

  def __init__(self, store, schema, rules, drop_taints=False,
               drop_consumable_capacity=False,
               drop_partitionable_devices=False):
    self.store = store
    self.schema = schema
    self.rules = rules
    self.drop_taints = drop_taints
    self.drop_consumable_capacity = drop_consumable_capacity
    self.drop_partitionable_devices = drop_partitionable_devices

  # Reads.

  def get(self, kind, namespace, name):
    """The stored object (not to be changed); 404 ApiError if missing."""
    with self.store.cond:
      obj = self.store.objects(kind.name).get((namespace, name))
    if obj is None:
      raise kind.not_found(name)
    return obj

  def list(self, kind, namespace, selector):
    """(items sorted by namespace/name, resourceVersion)."""
    with self.store.cond:
      objs = self.store.objects(kind.name)
      items = [o for k, o in sorted(objs.items())
               if (namespace is None or k[0] == namespace) and
               selector.matches(o)]
      return items, self.store.rv

  # Writes.

  def create(self, kind, namespace, body, manager=""):
    """Validates and stores a new object; returns it (body is not changed).

    namespace: the URL's (namespaced kinds); manager: the writer's field
    manager (manager_name). ApiError: 400 (bad body), 409 AlreadyExists,
    422 Invalid, 500 (resourceVersion set).
    """
    obj = self._prepare_body(kind, namespace, body)
    meta = obj["metadata"]
    meta.pop("managedFields", None)
    if meta.get("resourceVersion"):
      raise ApiError(500, "resourceVersion should not be set on objects to be "
                     "created", violation=True)
    if not meta.get("name") and meta.get("generateName"):
      meta["name"] = meta["generateName"] + "".join(
          random.choice(_NAME_CHARS) for _ in range(5))
    if kind.status:
      obj.pop("status", None)
    self._validate(kind, obj, None, status=False)
    with self.store.cond:
      objs = self.store.objects(kind.name)
      key = _object_key(obj)
      if key in objs:
        raise ApiError(409, '%s "%s" already exists' % (kind.resource,
                                                        key[1]),
                       reason="AlreadyExists",
                       details={"name": key[1], "group": kind.group,
                                "kind": kind.plural})
      for field in ("deletionTimestamp", "deletionGracePeriodSeconds",
                    "selfLink"):
        meta.pop(field, None)
      meta["uid"] = str(uuid.uuid4())
      meta["creationTimestamp"] = now_rfc3339()
      meta["generation"] = 1
      _record_manager(meta, manager, kind.api_version)
      rv = self.store.next_rv()
      meta["resourceVersion"] = str(rv)
      objs[key] = obj
      self.store.record(rv, "ADDED", kind, obj, None)
    return obj

  def update(self, kind, namespace, name, body, status=False, manager=""):
    """Replaces an object (or only its status); returns the stored one.

    manager: the writer's field manager (manager_name). ApiError: 400 (bad
    body, name mismatch), 404, 409 Conflict (stale resourceVersion or other
    uid), 422 Invalid.
    """
    new = self._prepare_body(kind, namespace, body)
    meta = new["metadata"]
    meta.pop("managedFields", None)
    if meta.get("name") != name:
      raise ApiError(400, "the name of the object (%s) does not match the "
                     "name on the URL (%s)" % (meta.get("name") or "", name))
    with self.store.cond:
      objs = self.store.objects(kind.name)
      old = objs.get((namespace or "", name))
      if old is None:
        raise kind.not_found(name)
      old_meta = old["metadata"]
      self._check_preconditions(kind, name, old_meta, meta.get("uid"),
                                meta.get("resourceVersion"))
      if status:
        new = kube_meta.clone(old)
        new["status"] = kube_meta.clone(body.get("status"))
        if new["status"] is None:
          del new["status"]
        meta = new["metadata"]
      elif kind.status:
        new.pop("status", None)
        if "status" in old:
          new["status"] = old["status"]
      for field in ("uid", "creationTimestamp", "deletionTimestamp",
                    "deletionGracePeriodSeconds", "generation",
                    "managedFields"):
        if field in old_meta:
          meta[field] = old_meta[field]
        else:
          meta.pop(field, None)
      meta.pop("selfLink", None)
      if not kube_meta.same(new.get("spec"), old.get("spec")):
        meta["generation"] = old_meta.get("generation", 0) + 1
      self._validate(kind, new, old, status=status)
      meta["resourceVersion"] = old_meta["resourceVersion"]
      if kube_meta.same(new, old):
        return old  # A no-op update writes nothing, as in etcd3.
      _record_manager(meta, manager, kind.api_version,
                      "status" if status else "")
      rv = self.store.next_rv()
      meta["resourceVersion"] = str(rv)
      objs[(namespace or "", name)] = new
      self.store.record(rv, "MODIFIED", kind, new, old)
    return new

  def delete(self, kind, namespace, name, options):
    """Deletes one object; options is a DeleteOptions dict (or {})."""
    pre = options.get("preconditions") or {}
    with self.store.cond:
      obj = self.store.objects(kind.name).get((namespace or "", name))
      if obj is None:
        raise kind.not_found(name)
      self._check_preconditions(kind, name, obj["metadata"], pre.get("uid"),
                                pre.get("resourceVersion"))
      return self._delete_locked(kind, obj)

  def delete_collection(self, kind, namespace, selector):
    """Deletes every matching object; (deleted objects, resourceVersion)."""
    with self.store.cond:
      items, _ = self.list(kind, namespace, selector)
      deleted = [self._delete_locked(kind, obj) for obj in items]
      return deleted, self.store.rv

  def _delete_locked(self, kind, obj):
    rv = self.store.next_rv()
    del self.store.objects(kind.name)[_object_key(obj)]
    gone = dict(obj)
    gone["metadata"] = dict(obj["metadata"], resourceVersion=str(rv))
    self.store.record(rv, "DELETED", kind, gone, obj)
    return gone

  # Helpers.

  def _check_preconditions(self, kind, name, meta, uid, rv):
    if uid and uid != meta.get("uid"):
      raise ApiError(409, "Precondition failed: UID in precondition: %s, UID "
                     "in object meta: %s" % (uid, meta.get("uid")),
                     reason="Conflict")
    if rv and rv != meta.get("resourceVersion"):
      raise ApiError(409, 'Operation cannot be fulfilled on %s "%s": the '
                     "object has been modified; please apply your changes to "
                     "the latest version and try again" % (kind.resource,
                                                           name),
                     details={"name": name, "group": kind.group,
                              "kind": kind.plural})

  def _prepare_body(self, kind, namespace, body):
    """A deep copy of body with kind, apiVersion and namespace checked."""
    if not isinstance(body, dict):
      raise ApiError(400, "the body of the request must be a JSON object",
                     violation=True)
    for field, want in (("kind", kind.name), ("apiVersion", kind.api_version)):
      if body.get(field) not in (None, "", want):
        raise ApiError(400, "%s %r in the body does not match %r" %
                       (field, body.get(field), want), violation=True)
    obj = kube_meta.clone(body)
    obj["kind"] = kind.name
    obj["apiVersion"] = kind.api_version
    meta = obj.get("metadata")
    if meta is None:
      meta = obj["metadata"] = {}
    elif not isinstance(meta, dict):
      raise ApiError(400, "metadata must be an object", violation=True)
    if kind.namespaced:
      if meta.get("namespace") not in (None, "", namespace):
        raise ApiError(400, "the namespace of the provided object does not "
                       "match the namespace sent on the request",
                       violation=True)
      meta["namespace"] = namespace
    else:
      meta.pop("namespace", None)  # As the real server: silently cleared.
    if kind.name == "ResourceSlice":
      spec = obj.get("spec")
      devices = spec.get("devices") if isinstance(spec, dict) else None
      if self.drop_partitionable_devices and isinstance(spec, dict):
        # As the real server without DRAPartitionableDevices.
        spec.pop("sharedCounters", None)
      for device in devices if isinstance(devices, list) else []:
        if not isinstance(device, dict):
          continue
        if self.drop_partitionable_devices:
          device.pop("consumesCounters", None)
        if self.drop_consumable_capacity:
          # As the real server without DRAConsumableCapacity.
          device.pop("allowMultipleAllocations", None)
          capacity = device.get("capacity")
          for cap in (capacity.values() if isinstance(capacity, dict)
                      else []):
            if isinstance(cap, dict):
              cap.pop("requestPolicy", None)
        if self.drop_taints:
          device.pop("taints", None)
          continue
        # As the real server: "TimeAdded ... Added automatically during
        # create or update if not set."
        taints = device.get("taints")
        for taint in taints if isinstance(taints, list) else []:
          if isinstance(taint, dict) and not taint.get("timeAdded"):
            taint["timeAdded"] = datetime.datetime.now(
                datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind.name == "ResourceClaim":
      kube_claim_rules.apply_claim_defaults(obj)
    return obj

  def _validate(self, kind, obj, old, status):
    """Raises ApiError 422 listing every problem of obj."""
    errs = []
    if self.schema is not None and kind.schema:
      errs = self.schema.check(kind.schema, obj)
    if not errs:
      if kind.name == "ResourceSlice":
        errs = self.rules.check_slice(obj, old)
      elif kind.name == "DeviceClass":
        errs = self.rules.check_class(obj, old)
      elif kind.name == "ResourceClaim" and status:
        errs = self.rules.check_claim_status(obj, old)
      elif kind.name == "ResourceClaim":
        errs = self.rules.check_claim(obj, old)
      elif kind.name == "NodeFeature":
        errs = kube_nodefeature.check(obj)
      else:
        errs = []
        kube_meta.check_object_meta(errs, obj.get("metadata"),
                                    kind.namespaced)
    if not errs:
      return
    name = (obj.get("metadata") or {}).get("name") or ""
    texts = [str(e) for e in errs]
    listing = texts[0] if len(texts) == 1 else "[%s]" % ", ".join(texts)
    group = "." + kind.group if kind.group else ""
    raise ApiError(422, '%s%s "%s" is invalid: %s' % (kind.name, group, name,
                                                      listing),
                   details={"name": name, "group": kind.group,
                            "kind": kind.name,
                            "causes": [e.cause() for e in errs]},
                   violation=True)


def strict_loads(data):
  """json.loads refusing duplicate member names (ValueError)."""

  def pairs(items):
    """A dict of the members; ValueError on a repeated name."""
    out = {}
    for key, value in items:
      if key in out:
        raise ValueError('duplicate field "%s"' % key)
      out[key] = value
    return out
  return json.loads(data, object_pairs_hook=pairs)

