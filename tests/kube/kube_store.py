"""The emulator's object store: objects, resourceVersions, watch history.

Store keeps every object by kind and (namespace, name), a global
resourceVersion counter (as etcd's revision: one for all kinds, bumped on
each write) and the last `history` watch events. Objects are dicts that are
never changed once stored (a write stores a new dict), so events and
readers may share them. All access goes through store.cond (a
threading.Condition): hold it to read or write, and wait on it for new
events. ApiError is an error answer (a metav1.Status).
"""

import collections
import json
import threading

REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden",
           404: "NotFound", 405: "MethodNotAllowed", 406: "NotAcceptable",
           409: "Conflict", 410: "Gone", 415: "UnsupportedMediaType",
           422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
           503: "ServiceUnavailable", 504: "Timeout"}


def status_object(code, message, reason=None, details=None):
  """A failure metav1.Status as kube-apiserver sends it."""
  status = {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message,
            "reason": reason or REASONS.get(code, "Unknown"), "code": code}
  if details:
    status["details"] = details
  return status


class ApiError(Exception):
  """An error answer. violation: the request sent an invalid object."""

  def __init__(self, code, message, reason=None, details=None,
               violation=False):
    super().__init__(message)
    self.code = code
    self.message = message
    self.reason = reason or REASONS.get(code, "Unknown")
    self.details = details
    self.violation = violation

  def status(self):
    """The metav1.Status answer of this error."""
    return status_object(self.code, self.message, self.reason, self.details)


class Gone(ApiError):
  """The requested resourceVersion is older than the kept history."""

  def __init__(self, requested, oldest):
    super().__init__(410, "too old resource version: %d (%d)" %
                     (requested, oldest), reason="Expired")


class Event:
  """One watch event: type ADDED/MODIFIED/DELETED, the object after the
  write (for DELETED: the last state, with the deletion's resourceVersion)
  and old, the object before it (None for ADDED)."""

  __slots__ = ("rv", "type", "kind", "obj", "old", "_json")

  def __init__(self, rv, event_type, kind, obj, old):
    self.rv = rv
    self.type = event_type
    self.kind = kind
    self.obj = obj
    self.old = old
    self._json = None

  def obj_json(self):
    """The object as JSON bytes, encoded once."""
    if self._json is None:
      self._json = json.dumps(self.obj, separators=(",", ":")).encode()
    return self._json


class Store:
  """Objects and watch history; see the module docstring."""

  def __init__(self, history=1000):
    self.cond = threading.Condition(threading.RLock())
    # Starts at 1 so that no LIST answers resourceVersion "0", which a
    # watch would take as "any" (like etcd, whose revisions start at 1).
    self.rv = 1
    self._objects = collections.defaultdict(dict)
    self._history = collections.deque(maxlen=max(1, history))
    # Events with rv <= compacted_rv may be missing from the history.
    self.compacted_rv = 0
    # Bumped to make open watches end (control API close-watches).
    self.watch_epoch = 0
    self.watch_abrupt = False
    self.open_watches = 0

  def objects(self, kind_name):
    """{(namespace, name): obj} of a kind; hold cond."""
    return self._objects[kind_name]

  def counts(self):
    """{kind name: number of objects}; hold cond."""
    return {k: len(v) for k, v in self._objects.items()}

  def next_rv(self):
    """A new resourceVersion; hold cond."""
    self.rv += 1
    return self.rv

  def record(self, rv, event_type, kind, obj, old):
    """Appends an event and wakes watchers; hold cond."""
    if len(self._history) == self._history.maxlen:
      self.compacted_rv = self._history[0].rv
    self._history.append(Event(rv, event_type, kind, obj, old))
    self.cond.notify_all()

  def events_after(self, rv):
    """Events with resourceVersion > rv, oldest first; hold cond.

    Raises Gone when some of them are no longer kept.
    """
    if rv < self.compacted_rv:
      oldest = self._history[0].rv if self._history else self.rv
      raise Gone(rv, oldest)
    out = []
    for event in reversed(self._history):
      if event.rv <= rv:
        break
      out.append(event)
    out.reverse()
    return out

  def compact(self):
    """Forgets the history: watches from older versions get 410."""
    with self.cond:
      self._history.clear()
      self.compacted_rv = self.rv
      self.cond.notify_all()

  def close_watches(self, abrupt):
    """Makes every open watch end (abrupt: drop the connection)."""
    with self.cond:
      self.watch_epoch += 1
      self.watch_abrupt = abrupt
      self.cond.notify_all()
