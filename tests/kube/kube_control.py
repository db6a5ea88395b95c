"""The emulator's test-facing state and its control API (/emulator/...).

State holds what tests steer and inspect: the valid bearer token, pending
faults, the log of requests and the recorded violations. State.control()
answers one /emulator/ request; apiserver.py's docstring lists the calls.
Every method is thread-safe (one lock).
"""

import threading
import time

import kube_allocator
import kube_api
import kube_meta
import kube_pool_rules


class Unsatisfiable(Exception):
  """A control call that cannot be done as asked (409 with the reason)."""


class State:
  """Token, faults, request log and violations; see the module docstring."""

  def __init__(self, api, token, max_requests=100000):
    self.api = api
    self._lock = threading.Lock()
    # One allocation at a time: each sees the ones before it.
    self._allocating = threading.Lock()
    self._token = token  # never changes
    self._faults = []
    self._violations = []
    self._requests = []
    self._max_requests = max_requests

  # Used by the request handler.

  def authorized(self, header):
    """Whether an Authorization header value carries the valid token."""
    if not header or not header.startswith("Bearer "):
      return False
    return header[len("Bearer "):].strip() == self._token

  def take_fault(self, method, path):
    """The first fault matching the request, counted down; or None."""
    with self._lock:
      for fault in self._faults:
        methods = fault.get("methods")
        if methods and method not in methods:
          continue
        if not path.startswith(fault.get("path_prefix") or ""):
          continue
        if fault["count"] > 0:
          fault["count"] -= 1
        taken = dict(fault)
        self._faults = [f for f in self._faults if f["count"] != 0]
        return taken
    return None

  def add_violation(self, method, path, message, obj):
    """Records a refused write."""
    entry = {"time": time.time(), "method": method, "path": path,
             "message": message, "object": obj}
    with self._lock:
      self._violations.append(entry)

  def add_request(self, entry):
    """Appends to the request log (the oldest go beyond max_requests)."""
    with self._lock:
      self._requests.append(entry)
      if len(self._requests) > self._max_requests:
        del self._requests[:len(self._requests) - self._max_requests]

  # The control API.

  def control(self, method, name, body):
    """(HTTP code, JSON answer) of METHOD /emulator/<name>."""
    handler = getattr(self, "_%s_%s" % (method.lower(),
                                        name.replace("-", "_")), None)
    if handler is None:
      return 404, {"error": "no control call %s /emulator/%s" % (method,
                                                                 name)}
    try:
      return 200, handler(body)
    except Unsatisfiable as e:
      return 409, {"error": str(e)}
    except (KeyError, TypeError, ValueError) as e:
      return 400, {"error": "bad request body: %s" % e}

  def _get_violations(self, _):
    with self._lock:
      return list(self._violations)

  def _delete_violations(self, _):
    with self._lock:
      self._violations = []
    return {}

  def _get_requests(self, _):
    with self._lock:
      return list(self._requests)

  def _delete_requests(self, _):
    with self._lock:
      self._requests = []
    return {}

  def _post_faults(self, body):
    if not isinstance(body, dict):
      raise ValueError("a fault is a JSON object")
    fault = {"count": int(body.get("count", 1)),
             "methods": [m.upper() for m in body.get("methods") or []],
             "path_prefix": str(body.get("path_prefix") or "")}
    if body.get("status") is not None:
      fault["status"] = int(body["status"])
    if body.get("close"):
      fault["close"] = True
    if body.get("delay_seconds") is not None:
      fault["delay_seconds"] = float(body["delay_seconds"])
    if body.get("answer_delay_seconds") is not None:
      fault["answer_delay_seconds"] = float(body["answer_delay_seconds"])
    if body.get("retry_after_seconds") is not None:
      fault["retry_after_seconds"] = int(body["retry_after_seconds"])
    if body.get("message") is not None:
      fault["message"] = str(body["message"])
    if not any(k in fault for k in ("status", "close", "delay_seconds",
                                    "answer_delay_seconds")):
      raise ValueError("a fault needs status, close, delay_seconds or "
                       "answer_delay_seconds")
    if fault["count"] == 0:
      raise ValueError("count must be non-zero (negative: every request)")
    with self._lock:
      self._faults.append(fault)
    return fault

  def _get_faults(self, _):
    with self._lock:
      return [dict(f) for f in self._faults]

  def _delete_faults(self, _):
    with self._lock:
      self._faults = []
    return {}

  def _post_drop_taints(self, body):
    if not isinstance(body.get("enabled"), bool):
      raise ValueError("enabled must be true or false")
    self.api.drop_taints = body["enabled"]
    return {"enabled": self.api.drop_taints}

  def _post_compact(self, _):
    self.api.store.compact()
    return {"resourceVersion": str(self.api.store.rv)}

  def _post_close_watches(self, body):
    abrupt = bool((body or {}).get("abrupt", False))
    self.api.store.close_watches(abrupt)
    return {"abrupt": abrupt}

  def _get_state(self, _):
    store = self.api.store
    with store.cond:
      return {"openWatches": store.open_watches, "objects": store.counts(),
              "dropTaints": self.api.drop_taints}

  def _slices_and_claims(self):
    store = self.api.store
    with store.cond:
      return (kube_meta.clone(list(store.objects("ResourceSlice").values())),
              kube_meta.clone(list(store.objects("ResourceClaim").values())))

  def _get_pools(self, _):
    slices, _ = self._slices_and_claims()
    return [p.summary() for p in kube_pool_rules.pools(slices)]

  def _post_allocate(self, body):
    if not isinstance(body, dict):
      raise ValueError("an allocation is a JSON object")
    namespace, name = str(body["namespace"]), str(body["name"])
    driver = str(body["driver"])
    requests = body["requests"]
    if not isinstance(requests, list) or not requests:
      raise ValueError("requests must be a non-empty list")
    for r in requests:
      if not isinstance(r, dict) or not isinstance(r.get("name"), str):
        raise ValueError("each request is an object with a name")
    with self._allocating:
      return self._allocate(namespace, name, driver, requests,
                            body.get("node"))

  def _allocate(self, namespace, name, driver, requests, node):
    kind = kube_api.KINDS["resourceclaims"]
    claim = kube_meta.clone(self.api.get(kind, namespace, name))
    slices, claims = self._slices_and_claims()
    results, why = kube_allocator.allocate(
        slices, claims, driver, requests, node=node,
        skip_uid=claim["metadata"].get("uid"))
    if results is None:
      raise Unsatisfiable("claim %s/%s cannot be allocated: %s" %
                          (namespace, name, why))
    claim.setdefault("status", {})["allocation"] = {
        "devices": {"results": results}}
    return self.api.update(kind, namespace, name, claim, status=True,
                           manager="emulator-allocator")
