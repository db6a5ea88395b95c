"""WATCH: one chunked HTTP answer, one JSON event per line.

serve(handler, kind, namespace, name, selector, query, entry) streams the
events of one kind from the store until timeoutSeconds pass, the client
goes away, the history no longer holds the next event (an ERROR event with
a 410 Status) or the control API closes watches. resourceVersion "" or "0"
first sends an ADDED event for each current matching object; any other
resourceVersion sends the events after it (an ERROR 410 event when it is
older than the kept history). With allowWatchBookmarks=true a BOOKMARK goes
out after the server's bookmark interval without events. A modified
object that starts or stops matching the selector arrives as ADDED or
DELETED, as kube-apiserver sends it.
"""

import json
import select
import socket
import ssl
import time

from kube_store import ApiError, Gone

_POLL_SECONDS = 0.25


class _Closed(Exception):
  pass


class _Stream:
  """Writes chunks of one watch answer."""

  def __init__(self, handler):
    self.handler = handler
    self.sock = handler.connection

  def head(self):
    """The status line and headers of the chunked answer."""
    self.handler.status = 200
    self._write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n"
        b"\r\n")

  def event(self, event_type, obj_json):
    """One event line (obj_json: the object's JSON bytes) as a chunk."""
    data = b'{"type":"' + event_type.encode() + b'","object":' + obj_json + \
        b"}\n"
    self._write(b"%x\r\n%s\r\n" % (len(data), data))

  def end(self):
    """The last chunk: the answer ends, the connection stays open."""
    self._write(b"0\r\n\r\n")

  def _write(self, data):
    try:
      self.handler.wfile.write(data)
    except (OSError, ssl.SSLError) as e:
      raise _Closed() from e

  def client_gone(self):
    """Whether the client closed its side (or sent something unexpected)."""
    try:
      readable, _, _ = select.select([self.sock], [], [], 0)
    except (OSError, ValueError):
      return True
    return bool(readable)


def _dumps(obj):
  return json.dumps(obj, separators=(",", ":")).encode()


def _parse_rv(text):
  try:
    rv = int(text)
  except ValueError:
    raise ApiError(400, "invalid resource version: %s" % text) from None
  if rv < 0:
    raise ApiError(400, "invalid resource version: %s" % text)
  return rv


def serve(handler, kind, namespace, name, selector, query, entry):
  """Streams the watch; see the module docstring."""
  server = handler.server
  store = server.state.api.store
  rv_text = query.get("resourceVersion", "")
  bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
  timeout = query.get("timeoutSeconds")
  deadline = None
  if timeout and float(timeout) > 0:
    deadline = time.time() + float(timeout)
  start_rv = None if rv_text in ("", "0") else _parse_rv(rv_text)

  def matches(obj):
    """Whether obj is one this watch reports."""
    if obj is None:
      return False
    meta = obj.get("metadata") or {}
    if namespace is not None and meta.get("namespace") != namespace:
      return False
    if name is not None and meta.get("name") != name:
      return False
    return selector.matches(obj)

  with store.cond:
    initial = []
    if start_rv is None:
      initial = [o for _, o in sorted(store.objects(kind.name).items())
                 if matches(o)]
      start_rv = store.rv
    gone = None
    if start_rv < store.compacted_rv:
      gone = Gone(start_rv, store.compacted_rv)
    epoch = store.watch_epoch
    store.open_watches += 1
  stream = _Stream(handler)
  entry["status"] = 200
  entry["duration"] = None
  server.state.add_request(entry)
  try:
    stream.head()
    if gone is not None:
      stream.event("ERROR", _dumps(gone.status()))
      stream.end()
      return
    for obj in initial:
      stream.event("ADDED", _dumps(obj))
    _loop(stream, store, kind, matches, start_rv, deadline, epoch,
          server.bookmark_seconds if bookmarks else None)
  except _Closed:
    handler.close_connection = True
  finally:
    with store.cond:
      store.open_watches -= 1


def _bookmark(kind, rv):
  return _dumps({"kind": kind.name, "apiVersion": kind.api_version,
                 "metadata": {"resourceVersion": str(rv)}})


def _translate(event, kind, matches):
  """The event type a watcher of kind with this filter sees, or None."""
  if event.kind is not kind:
    return None
  if event.type == "ADDED":
    return "ADDED" if matches(event.obj) else None
  if event.type == "DELETED":
    return "DELETED" if matches(event.obj) else None
  now, before = matches(event.obj), matches(event.old)
  if now and before:
    return "MODIFIED"
  if now:
    return "ADDED"
  return "DELETED" if before else None


def _loop(stream, store, kind, matches, last_rv, deadline, epoch,
          bookmark_seconds):
  last_sent = time.time()
  abrupt = False
  while True:
    now = time.time()
    if deadline is not None and now >= deadline:
      break
    if stream.client_gone():
      raise _Closed()
    wait = _POLL_SECONDS
    if deadline is not None:
      wait = min(wait, max(0.0, deadline - now))
    error = None
    with store.cond:
      if store.watch_epoch != epoch:
        abrupt = store.watch_abrupt
        break
      try:
        events = store.events_after(last_rv)
      except Gone as gone:
        error, events = gone, []
      if not events and error is None:
        store.cond.wait(wait)
    if error is not None:
      stream.event("ERROR", _dumps(error.status()))
      break
    for event in events:
      event_type = _translate(event, kind, matches)
      if event_type is not None:
        stream.event(event_type, event.obj_json())
        last_sent = time.time()
    if events:
      last_rv = events[-1].rv
    if bookmark_seconds and time.time() - last_sent >= bookmark_seconds:
      stream.event("BOOKMARK", _bookmark(kind, last_rv))
      last_sent = time.time()
  if abrupt:
    try:
      stream.sock.shutdown(socket.SHUT_RDWR)
    except OSError:
      pass
    raise _Closed()
  stream.end()
