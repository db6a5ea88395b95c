"""A small Kubernetes API client for tests (kubeconfig + bearer token).

  c = Client.from_kubeconfig(path)      # or Client(server, ca_file, token)
  code, obj = c.request("GET", "/api/v1/nodes/n1")
  obj = c.get("resourceslices", "name")                  # raises KubeError
  c.list("resourceclaims", namespace="ns", field_selector="...")
  c.create / c.update(kind, obj, status=False) / c.delete / c.watch(...)
  c.control("GET", "violations")        # the emulator's /emulator/ API
A Client keeps one HTTPS keep-alive connection (not thread-safe; make one
per thread); close() or a with block closes it. A request is never
retried (a test may have asked for its failure); a connection the server
closed while idle is replaced before the next request.
"""

import base64
import http.client
import json
import select
import ssl
import urllib.parse

import yaml

_PATHS = {"nodes": "/api/v1", "resourceslices": "/apis/resource.k8s.io/v1",
          "deviceclasses": "/apis/resource.k8s.io/v1",
          "resourceclaims": "/apis/resource.k8s.io/v1"}
_NAMESPACED = {"resourceclaims"}


class KubeError(Exception):
  """An error answer: code and the Status (or other JSON) body."""

  def __init__(self, code, body):
    super().__init__("HTTP %d: %s" % (code, json.dumps(body)))
    self.code = code
    self.body = body


def resource_path(resource, namespace=None, name=None, sub=None):
  """The URL path of a resource collection or object."""
  if resource not in _PATHS:
    raise ValueError("unknown resource %r (one of %s)" %
                     (resource, ", ".join(sorted(_PATHS))))
  path = _PATHS[resource]
  if resource in _NAMESPACED and namespace is not None:
    path += "/namespaces/" + namespace
  path += "/" + resource
  if name:
    path += "/" + name
  if sub:
    path += "/" + sub
  return path


class Client:
  """See the module docstring."""

  def __init__(self, server, ca_file=None, token=None, timeout=30,
               ca_data=None):
    url = urllib.parse.urlsplit(server)
    self.host, self.port = url.hostname, url.port or 443
    self.token = token
    self.timeout = timeout
    self.context = ssl.create_default_context(cafile=ca_file, cadata=ca_data)
    self._conn = None

  @classmethod
  def from_kubeconfig(cls, path, timeout=30):
    """A Client for the current context of a kubeconfig file.

    Reads certificate-authority or certificate-authority-data, and token
    or tokenFile. Raises OSError, KeyError or StopIteration when the file
    is missing or lacks them.
    """
    with open(path, encoding="utf-8") as f:
      config = yaml.safe_load(f)
    ctx_name = config.get("current-context")
    ctx = next(c["context"] for c in config["contexts"]
               if c["name"] == ctx_name)
    cluster = next(c["cluster"] for c in config["clusters"]
                   if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in config["users"]
                if u["name"] == ctx["user"])
    ca_file = cluster.get("certificate-authority")
    ca_data = None
    if cluster.get("certificate-authority-data"):
      ca_data = base64.b64decode(
          cluster["certificate-authority-data"]).decode("ascii")
    token = user.get("token")
    if not token and user.get("tokenFile"):
      with open(user["tokenFile"], encoding="ascii") as f:
        token = f.read().strip()
    return cls(cluster["server"], ca_file, token, timeout, ca_data)

  def _connection(self):
    """The keep-alive connection; a new one if the server closed it."""
    if self._conn is not None and self._conn.sock is not None:
      try:
        readable, _, _ = select.select([self._conn.sock], [], [], 0)
      except (OSError, ValueError):
        readable = True
      if readable:  # EOF (or stray bytes) on an idle connection.
        self.close()
    if self._conn is None:
      self._conn = http.client.HTTPSConnection(
          self.host, self.port, context=self.context, timeout=self.timeout)
    return self._conn

  def close(self):
    """Closes the keep-alive connection (a later call opens another)."""
    if self._conn is not None:
      self._conn.close()
      self._conn = None

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()

  def request(self, method, path, body=None, headers=None):
    """(status code, parsed JSON or text) of one request."""
    data = None if body is None else json.dumps(body).encode()
    hdrs = {"Accept": "application/json", "User-Agent": "kube_client.py"}
    if data is not None:
      hdrs["Content-Type"] = "application/json"
    if self.token:
      hdrs["Authorization"] = "Bearer " + self.token
    hdrs.update(headers or {})
    conn = self._connection()
    try:
      conn.request(method, path, body=data, headers=hdrs)
      resp = conn.getresponse()
      raw = resp.read()
    except (OSError, http.client.HTTPException):
      self.close()  # Not retried: a test may have asked for this failure.
      raise
    if resp.will_close:
      self.close()
    try:
      return resp.status, json.loads(raw) if raw else None
    except ValueError:
      return resp.status, raw.decode("utf-8", "replace")

  def _ok(self, method, path, body=None):
    code, answer = self.request(method, path, body)
    if code // 100 != 2:
      raise KubeError(code, answer)
    return answer

  # The verbs: the JSON answer, or KubeError for an error answer.

  def get(self, resource, name, namespace=None):
    return self._ok("GET", resource_path(resource, namespace, name))

  def list(self, resource, namespace=None, field_selector=None,
           label_selector=None):
    query = _query(fieldSelector=field_selector, labelSelector=label_selector)
    return self._ok("GET", resource_path(resource, namespace) + query)

  def create(self, resource, obj, namespace=None):
    namespace = namespace or (obj.get("metadata") or {}).get("namespace")
    return self._ok("POST", resource_path(resource, namespace), obj)

  def update(self, resource, obj, namespace=None, status=False):
    meta = obj.get("metadata") or {}
    namespace = namespace or meta.get("namespace")
    return self._ok("PUT", resource_path(resource, namespace, meta["name"],
                                         "status" if status else None), obj)

  def delete(self, resource, name, namespace=None, uid=None,
             resource_version=None):
    options = None
    if uid or resource_version:
      pre = {}
      if uid:
        pre["uid"] = uid
      if resource_version:
        pre["resourceVersion"] = resource_version
      options = {"kind": "DeleteOptions", "apiVersion": "v1",
                 "preconditions": pre}
    return self._ok("DELETE", resource_path(resource, namespace, name),
                    options)

  def delete_collection(self, resource, namespace=None, field_selector=None,
                        label_selector=None):
    query = _query(fieldSelector=field_selector, labelSelector=label_selector)
    return self._ok("DELETE", resource_path(resource, namespace) + query)

  def watch(self, resource, namespace=None, resource_version=None,
            timeout=None, field_selector=None, label_selector=None,
            bookmarks=False, read_timeout=60):
    """Yields the events of a watch (dicts) on its own connection."""
    query = _query(watch="true", resourceVersion=resource_version,
                   timeoutSeconds=timeout, fieldSelector=field_selector,
                   labelSelector=label_selector,
                   allowWatchBookmarks="true" if bookmarks else None)
    path = resource_path(resource, namespace) + query
    return self.stream(path, read_timeout)

  def stream(self, path, read_timeout=60):
    """Yields the JSON lines of a streamed GET of path."""
    conn = http.client.HTTPSConnection(self.host, self.port,
                                       context=self.context,
                                       timeout=read_timeout)
    try:
      headers = {"Authorization": "Bearer " + self.token} if self.token \
          else {}
      conn.request("GET", path, headers=headers)
      resp = conn.getresponse()
      if resp.status != 200:
        raise KubeError(resp.status, json.loads(resp.read() or b"null"))
      while True:
        line = resp.readline()
        if not line:
          return
        yield json.loads(line)
    finally:
      conn.close()

  def control(self, method, name, body=None):
    """A call of the emulator's control API (/emulator/<name>)."""
    return self._ok(method, "/emulator/" + name, body)


def _query(**params):
  items = [(k, str(v)) for k, v in params.items() if v is not None]
  return "?" + urllib.parse.urlencode(items) if items else ""

