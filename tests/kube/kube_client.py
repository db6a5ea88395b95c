"""A small Kubernetes API client for tests (kubeconfig + bearer token).

  c = Client.from_kubeconfig(path)      # or Client(server, ca_file, token)
  code, obj = c.request("GET", "/api/v1/nodes/n1")
  obj = c.get("resourceslices", "name")                  # raises KubeError
  c.list("resourceclaims", namespace="ns", field_selector="...")
  c.create / c.update(kind, obj, status=False) / c.delete / c.watch(...)
  c.control("GET", "violations")        # the emulator's /emulator/ API
A Client keeps one HTTPS keep-alive connection (urllib3, thread-safe); a
request is never retried (a test may have asked for its failure), and a
connection the server closed while idle is replaced before the next
request. close() or a with block closes it. A failed request raises
urllib3's errors (urllib3.exceptions.HTTPError); a watch the server drops
ends like one it closes.
"""

import json
import urllib.parse

import kubernetes.client
import kubernetes.config
import urllib3

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

  def __init__(self, server, ca_file=None, token=None, timeout=30):
    self.token = token
    self._args = dict(cert_reqs="CERT_REQUIRED", ca_certs=ca_file,
                      retries=False)
    self._pool = urllib3.connection_from_url(server, maxsize=1,
                                             timeout=timeout, **self._args)

  @classmethod
  def from_kubeconfig(cls, path, timeout=30):
    """A Client for the current context of a kubeconfig file
    (kubernetes.config reads it; its ConfigException when it cannot)."""
    cfg = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(path, client_configuration=cfg,
                                       persist_config=False)
    token = cfg.api_key.get("authorization", "").replace("Bearer ", "", 1)
    return cls(cfg.host, cfg.ssl_ca_cert, token or None, timeout)

  def close(self):
    """Closes the keep-alive connection; the Client is then done."""
    self._pool.close()

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()

  def _headers(self, headers=None):
    hdrs = {"Accept": "application/json", "User-Agent": "kube_client.py"}
    if self.token:
      hdrs["Authorization"] = "Bearer " + self.token
    hdrs.update(headers or {})
    return hdrs

  def request(self, method, path, body=None, headers=None):
    """(status code, parsed JSON or text) of one request."""
    hdrs = self._headers(headers)
    data = None if body is None else json.dumps(body).encode()
    if data is not None:
      hdrs.setdefault("Content-Type", "application/json")
    resp = self._pool.urlopen(method, path, body=data, headers=hdrs,
                              redirect=False)
    try:
      return resp.status, json.loads(resp.data) if resp.data else None
    except ValueError:
      return resp.status, resp.data.decode("utf-8", "replace")

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
    """Yields the JSON lines of a streamed GET of path (own connection)."""
    pool = urllib3.HTTPSConnectionPool(self._pool.host, self._pool.port,
                                       timeout=read_timeout, **self._args)
    try:
      resp = pool.urlopen("GET", path, headers=self._headers(),
                          preload_content=False)
      if resp.status != 200:
        raise KubeError(resp.status, json.loads(resp.read() or b"null"))
      try:
        for line in resp:
          yield json.loads(line)
      except urllib3.exceptions.ProtocolError:
        return  # The server dropped the connection: the stream ends.
    finally:
      pool.close()

  def control(self, method, name, body=None):
    """A call of the emulator's control API (/emulator/<name>)."""
    return self._ok(method, "/emulator/" + name, body)


def _query(**params):
  items = [(k, str(v)) for k, v in params.items() if v is not None]
  return "?" + urllib.parse.urlencode(items) if items else ""

