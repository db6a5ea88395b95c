"""HTTPS front end of the emulator: routing, auth, faults, answers.

Server is a ThreadingHTTPServer (daemon threads) that does each
connection's TLS handshake in that connection's thread, so a slow client
never holds up accept(). Handler speaks HTTP/1.1 with keep-alive: every
answer goes out in one write with Content-Length; watches (kube_watch) use
chunked transfer encoding. Errors are metav1.Status objects.
"""

import http.server
import json
import socket
import ssl
import time
import traceback
import urllib.parse

import kube_discovery
import kube_watch
from kube_api import KINDS, manager_name, strict_loads
from kube_selectors import Selector
from kube_store import ApiError, status_object

_MAX_BODY = 3 * 1024 * 1024


class Server(http.server.ThreadingHTTPServer):
  """The listening server; state is a kube_control.State."""

  daemon_threads = True
  allow_reuse_address = True
  request_queue_size = 128

  def __init__(self, address, ssl_context, state, kube_minor,
               bookmark_seconds):
    self.ssl_context = ssl_context
    self.state = state
    self.kube_minor = kube_minor
    self.bookmark_seconds = bookmark_seconds
    super().__init__(address, Handler)

  def finish_request(self, request, client_address):
    """TLS handshake (30 s at most), then the HTTP connection's requests."""
    request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    request.settimeout(30)
    try:
      tls = self.ssl_context.wrap_socket(request, server_side=True)
    except (OSError, ssl.SSLError):
      request.close()
      return
    tls.settimeout(None)
    try:
      self.RequestHandlerClass(tls, client_address, self)
    finally:
      try:
        tls.close()
      except OSError:
        pass

  def handle_error(self, request, client_address):
    pass  # A client that went away; nothing to report.


class Handler(http.server.BaseHTTPRequestHandler):
  """One connection; see the module docstring."""

  protocol_version = "HTTP/1.1"
  server_version = "kube-apiserver-emulator"
  answer_delay = 0  # seconds the next answer is held (a fault)

  def log_message(self, *args):
    pass

  def do_GET(self):
    self._handle("GET")

  def do_POST(self):
    self._handle("POST")

  def do_PUT(self):
    self._handle("PUT")

  def do_DELETE(self):
    self._handle("DELETE")

  def do_PATCH(self):
    self._handle("PATCH")

  # Plumbing.

  def send_bytes(self, code, body, content_type="application/json",
                 extra=None):
    """Sends a whole answer in one write and notes its status."""
    self.status = code
    phrase = self.responses.get(code, ("Status",))[0]  # http.HTTPStatus's
    head = ["HTTP/1.1 %d %s" % (code, phrase),
            "Content-Type: " + content_type,
            "Content-Length: %d" % len(body),
            "Cache-Control: no-cache, private",
            "Date: " + self.date_time_string()]
    if self.close_connection:
      head.append("Connection: close")
    for key, value in (extra or {}).items():
      head.append("%s: %s" % (key, value))
    data = ("\r\n".join(head) + "\r\n\r\n").encode() + body
    if self.answer_delay:
      time.sleep(self.answer_delay)
      self.answer_delay = 0
    self.wfile.write(data)

  def send_json(self, code, obj, extra=None):
    """Sends obj as a JSON answer."""
    self.send_bytes(code, json.dumps(obj, separators=(",", ":")).encode(),
                    extra=extra)

  def send_error_status(self, err, extra=None):
    """Sends an ApiError's Status."""
    self.send_json(err.code, err.status(), extra)

  def _read_body(self):
    """The request body as bytes (its clients all send Content-Length)."""
    length = int(self.headers.get("Content-Length") or 0)
    if length > _MAX_BODY:
      raise ApiError(413, "Request entity too large: limit is %d" % _MAX_BODY,
                     reason="RequestEntityTooLarge")
    return self.rfile.read(length) if length else b""

  def _handle(self, method):
    start = time.time()
    self.status = 0
    self.answer_delay = 0
    url = urllib.parse.urlsplit(self.path)
    path = url.path
    query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
    state = self.server.state
    if path.startswith("/emulator/"):
      self._control(method, path[len("/emulator/"):])
      return
    entry = {"time": start, "method": method, "path": self.path,
             "status": 0, "user_agent": self.headers.get("User-Agent", "")}
    try:
      self.body = self._read_body()
      self._serve(method, path, query, entry)
    except ApiError as e:
      self.send_error_status(e)
    except (ConnectionError, ssl.SSLError, socket.timeout):
      self.close_connection = True
    except ValueError as e:
      self.send_error_status(ApiError(400, "bad request: %s" % e))
    except Exception as e:  # pylint: disable=broad-except
      traceback.print_exc()
      self.close_connection = True
      self.send_error_status(ApiError(500, "emulator error: %r" % e))
    finally:
      if entry["status"] == 0:
        entry["status"] = self.status
        entry["duration"] = time.time() - start
        state.add_request(entry)

  def _control(self, method, name):
    try:
      raw = self._read_body()
      body = json.loads(raw) if raw.strip() else {}
    except (ValueError, ApiError) as e:
      self.send_json(400, {"error": "body is not JSON: %s" % e})
      return
    code, answer = self.server.state.control(method, name, body)
    self.send_json(code, answer)

  def _apply_fault(self, method, path):
    """True when a fault answered (or dropped) the request."""
    fault = self.server.state.take_fault(method, path)
    if fault is None:
      return False
    if fault.get("delay_seconds"):
      time.sleep(fault["delay_seconds"])
    self.answer_delay = fault.get("answer_delay_seconds") or 0
    if fault.get("close"):
      self.close_connection = True
      self.status = -1
      try:
        self.connection.shutdown(socket.SHUT_RDWR)
      except OSError:
        pass
      return True
    if fault.get("status"):
      code = fault["status"]
      extra = {}
      if fault.get("retry_after_seconds") is not None:
        extra["Retry-After"] = str(fault["retry_after_seconds"])
      self.send_json(code, status_object(
          code, fault.get("message") or "fault injected by the emulator"),
                     extra)
      return True
    return False

  def _serve(self, method, path, query, entry):
    if path in ("/healthz", "/livez", "/readyz"):
      self.send_bytes(200, b"ok", content_type="text/plain")
      return
    if self._apply_fault(method, path):
      return
    if not self.server.state.authorized(self.headers.get("Authorization")):
      raise ApiError(401, "Unauthorized")
    answer = kube_discovery.answer(path, self.server.kube_minor,
                                   self.server.server_address[1])
    if answer is not None:
      if method != "GET":
        raise ApiError(405, "the server does not allow this method on the "
                       "requested resource")
      self.send_json(200, answer)
      return
    route = kube_discovery.route(path)
    if route is None:
      raise ApiError(404, "the server could not find the requested resource")
    plural, namespace, name, sub = route
    kind = KINDS[plural]
    if sub is not None and not (sub == "status" and kind.status):
      raise ApiError(404, "the server could not find the requested resource")
    if kind.namespaced and namespace is None and (name or method != "GET"):
      raise ApiError(404, "the server could not find the requested resource")
    if "dryRun" in query:
      raise ApiError(400, "dryRun is not supported by the emulator")
    if method == "GET" and query.get("watch") in ("true", "1"):
      selector = self._selector(kind, query)
      kube_watch.serve(self, kind, namespace, name, selector, query, entry)
    elif method == "GET" and name:
      self.send_json(200, self.server.state.api.get(kind, namespace or "",
                                                    name))
    elif method == "GET":
      self._list(kind, namespace, query)
    elif method == "POST" and not name:
      obj = self._write_body(method)
      manager = manager_name(query.get("fieldManager"),
                             self.headers.get("User-Agent"))
      self.send_json(201, self._guard(method, obj, lambda: (
          self.server.state.api.create(kind, namespace, obj, manager))))
    elif method == "PUT" and name:
      obj = self._write_body(method)
      manager = manager_name(query.get("fieldManager"),
                             self.headers.get("User-Agent"))
      self.send_json(200, self._guard(method, obj, lambda: (
          self.server.state.api.update(kind, namespace, name, obj,
                                       status=sub == "status",
                                       manager=manager))))
    elif method == "DELETE" and name:
      options = json.loads(self.body) if self.body.strip() else {}
      if not isinstance(options, dict):
        raise ApiError(400, "DeleteOptions must be a JSON object")
      self.send_json(200, self.server.state.api.delete(kind, namespace, name,
                                                       options))
    elif method == "DELETE":
      deleted, rv = self.server.state.api.delete_collection(
          kind, namespace, self._selector(kind, query))
      self.send_json(200, _list_object(kind, deleted, rv))
    else:
      raise ApiError(405, "%s is not supported by the emulator on %s" %
                     (method, path), reason="MethodNotAllowed")

  def _guard(self, method, obj, write):
    """Runs write(); records an ApiError that is a violation, re-raises."""
    try:
      return write()
    except ApiError as e:
      if e.violation:
        self.server.state.add_violation(method, self.path, e.message, obj)
      raise

  def _write_body(self, method):
    """The parsed JSON body of a create/update (duplicates refused)."""
    raw = self.body
    media = self.headers.get("Content-Type", "").split(";")[0].strip()
    if media != "application/json":
      message = ("the body of the request was in an unknown format (Content-"
                 "Type %r) - the emulator accepts application/json" % media)
      self.server.state.add_violation(method, self.path, message,
                                      raw.decode("utf-8", "replace"))
      raise ApiError(415, message, reason="UnsupportedMediaType",
                     violation=True)
    try:
      return strict_loads(raw)
    except ValueError as e:
      message = "strict decoding error: %s" % e
      self.server.state.add_violation(method, self.path, message,
                                      raw.decode("utf-8", "replace"))
      raise ApiError(400, message, violation=True) from None

  def _selector(self, kind, query):
    try:
      return Selector.parse(query.get("fieldSelector"),
                            query.get("labelSelector"), kind.fields)
    except ValueError as e:
      raise ApiError(400, str(e)) from None

  def _list(self, kind, namespace, query):
    items, rv = self.server.state.api.list(kind, namespace,
                                           self._selector(kind, query))
    cont = kube_discovery.decode_continue(query.get("continue"))
    if cont is not None:
      items = [o for o in items if kube_discovery.key_of(o) > cont]
    limit = int(query.get("limit") or 0)
    out = _list_object(kind, items[:limit] if limit > 0 else items, rv)
    if 0 < limit < len(items):
      out["metadata"]["continue"] = kube_discovery.encode_continue(
          rv, kube_discovery.key_of(items[limit - 1]))
      out["metadata"]["remainingItemCount"] = len(items) - limit
    self.send_json(200, out)


def _list_object(kind, items, rv):
  """A <Kind>List; items carry no kind/apiVersion, as from the server."""
  stripped = []
  for obj in items:
    item = dict(obj)
    item.pop("kind", None)
    item.pop("apiVersion", None)
    stripped.append(item)
  return {"kind": kind.name + "List", "apiVersion": kind.api_version,
          "metadata": {"resourceVersion": str(rv)}, "items": stripped}
