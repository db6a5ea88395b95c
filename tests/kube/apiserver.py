#!/usr/bin/python3
"""A Kubernetes API server emulator for tests (resource.k8s.io/v1 + Nodes).

Emulates the part of kube-apiserver that a DRA kubelet plugin talks to
(publishing ResourceSlices, reading ResourceClaims) and validates every
object written as the real server would, recording each refusal so a test
can assert there were none. Python 3 with Debian's python3-cryptography,
python3-jsonschema and python3-yaml only.

CLI
  apiserver.py --dir DIR [--port N] [--schema PATH]
               [--kube-version 1.34|1.35|1.36] [--drop-taints]
               [--drop-consumable-capacity] [--drop-partitionable-devices]
               [--history N] [--bookmark-seconds S]

  --dir DIR        Credentials, created once and reused when present:
                   DIR/ca.crt, DIR/ca.key (ECDSA P-256 CA), DIR/server.crt,
                   DIR/server.key (SANs 127.0.0.1, ::1, localhost), DIR/token
                   (the bearer token). DIR/kubeconfig (certificate-authority:
                   DIR/ca.crt, token inline) and DIR/kubeconfig-inline
                   (certificate-authority-data, token inline) are rewritten at
                   each start for the port listened on.
  --port N         127.0.0.1:N, HTTPS (default 0: a free port). A fixed port
                   lets a test start the client first and the emulator later,
                   or stop and restart it (same --dir: same CA and token).
  --schema PATH    The OpenAPI v3 document of resource.k8s.io/v1 (default,
                   under ../shared/k8s-openapi/ from the repository root:
                   resource.k8s.io-v1-release-1.36.json for --kube-version
                   1.36, else resource.k8s.io-v1.json). Absent: schema and
                   field checks are skipped (one line on stderr says so); the
                   checks across fields still run.
  --kube-version   The release whose rules apply (default: the environment
                   variable GDP_EMULATOR_KUBE_VERSION, else 1.35); /version
                   reports it.
  --drop-taints    Emulates a cluster without the DRADeviceTaints feature
                   gate: spec.devices[].taints are silently dropped from
                   ResourceSlices written (before validation), as the real
                   server drops disabled fields. Without it, a taint written
                   without timeAdded gets the current time, as from the
                   real server.
  --drop-consumable-capacity  Emulates a cluster without the
                   DRAConsumableCapacity feature gate (alpha and off in 1.34
                   and 1.35, beta and on from 1.36): allowMultipleAllocations
                   and spec.devices[].capacity[].requestPolicy are silently
                   dropped from ResourceSlices written (before validation).
                   Always on with --kube-version 1.34 and 1.35, whose gate
                   is off by default (the older OpenAPI document used for
                   them lacks the fields); with 1.36 they are kept and
                   checked (requestPolicy by validateRequestPolicy of
                   pkg/apis/resource/validation).
  --drop-partitionable-devices  Emulates a cluster without the
                   DRAPartitionableDevices feature gate (alpha and off in
                   1.34 and 1.35, beta and on from 1.36): spec.sharedCounters
                   and spec.devices[].consumesCounters are silently dropped
                   from ResourceSlices written (before validation). Always
                   on with --kube-version 1.34 and 1.35; with 1.36 they are
                   kept and checked (kube_slice_rules per slice,
                   kube_pool_rules across a pool: /emulator/pools).
  --history N      Watch events kept (default 1000); a watch from an older
                   resourceVersion gets an ERROR event with a 410 Status.
  --bookmark-seconds S  Idle time after which a watch with
                   allowWatchBookmarks=true gets a BOOKMARK (default 5).

  When ready it prints one JSON line on stdout and flushes it:
  {"event":"listening","port":N,"kubeconfig":"DIR/kubeconfig",
   "ca":"DIR/ca.crt","token":"..."}
  SIGTERM and SIGINT exit 0 at once, open watches included.

API (JSON only; HTTP/1.1 keep-alive, threaded)
  Authentication: "Authorization: Bearer <token>" must name the token of
  DIR/token, else 401 Unauthorized.
  Kinds: core/v1 Node (/api/v1/nodes[/NAME]); resource.k8s.io/v1
  ResourceSlice (/apis/resource.k8s.io/v1/resourceslices[/NAME]),
  DeviceClass (.../deviceclasses[/NAME]), ResourceClaim
  (.../namespaces/NS/resourceclaims[/NAME[/status]]; LIST and WATCH of
  .../resourceclaims across namespaces); NFD's nfd.k8s-sigs.io/v1alpha1
  NodeFeature (/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/NS/nodefeatures
  [/NAME]; checked against NFD's CRD, kube_nodefeature.py; not in
  discovery). Discovery: /api, /api/v1, /apis,
  /apis/resource.k8s.io, /apis/resource.k8s.io/v1, and /version ({"major":"1","minor":"35",...}).
  /healthz, /livez and /readyz answer "ok" without authentication.
  Verbs:
    GET one; LIST (<Kind>List, metadata.resourceVersion = current; items
      sorted by namespace/name and, as from the real server, without
      kind/apiVersion; limit + continue page through them);
    WATCH (?watch=true|1): resourceVersion ""/"0" first sends ADDED for
      every current match; other values send the events after it, or an
      ERROR event (Status 410, reason Expired) when older than the kept
      history; allowWatchBookmarks, timeoutSeconds (the stream then ends
      cleanly). An object that starts
      or stops matching the selector arrives as ADDED / DELETED;
    POST create (201; metadata.generateName + 5 random characters of
      [a-z0-9] (the real server's alphabet, without vowels); 409
      AlreadyExists; a resourceVersion set in the body is refused (500) as
      by the real server);
    PUT update (404 if missing; 409 Conflict when metadata.resourceVersion
      or metadata.uid is given and differs; an update that changes nothing
      writes nothing and keeps the resourceVersion). On a ResourceClaim the
      main resource ignores status and /status changes only status;
    DELETE one (200 with the object; DeleteOptions body with
      preconditions.uid / preconditions.resourceVersion: 409 Conflict on
      mismatch). The object goes at once: metadata.finalizers are kept
      as written but hold nothing back (no graceful deletion);
    DELETECOLLECTION (DELETE on the collection, fieldSelector /
      labelSelector; answers the <Kind>List of what was deleted).
    PATCH is not supported (405), nor is dryRun (400).
  Bodies of POST and PUT must be Content-Type: application/json (else 415,
  recorded as a violation). Field validation is always Strict, whatever
  fieldValidation says (the real server's default, Warn, would drop unknown
  fields with a warning; refusing them catches the client's mistake).
  Selectors: fieldSelector terms f=v, f==v, f!=v joined by commas, on
  metadata.name, metadata.namespace and, for ResourceSlice, spec.nodeName,
  spec.driver, spec.pool.name (others: 400 "field label not supported");
  labelSelector k=v, k==v, k!=v (set-based terms: 400).
  Server-set fields: metadata.uid (uuid4), metadata.resourceVersion (one
  counter for all kinds, bumped by every write), creationTimestamp,
  generation (1, +1 when spec changes), managedFields (an Update entry per
  writer: manager = the fieldManager parameter or the User-Agent up to its
  first '/', apiVersion, time of its last write that changed the object,
  subresource "status" for /status; no fieldsV1; managedFields sent are
  ignored); kind and apiVersion are filled in;
  a namespace sent for a cluster-scoped kind is dropped, as by the real
  server.
  Claims get the server's defaults (allocationMode ExactCount, count 1,
  toleration operator Equal). Errors are metav1.Status objects with the
  real server's codes and reasons (NotFound, AlreadyExists, Conflict,
  Invalid, Unauthorized, Expired, BadRequest, MethodNotAllowed,
  ServiceUnavailable, ...).

Validation (every POST/PUT of ResourceSlice, ResourceClaim, DeviceClass)
  A refused write answers 422 reason Invalid; the message, like the real
  server's, is '<Kind>.resource.k8s.io "<name>" is invalid: [<path>:
  <problem>, ...]' with paths such as spec.devices[3].attributes[foo].version
  (details.causes lists them one by one). Each refusal is also recorded as
  a violation (see /emulator/violations). Bodies with duplicate JSON keys
  (400, strict decoding error), kind/apiVersion/namespace mismatches (400),
  a Content-Type other than application/json (415) and a resourceVersion
  on create (500) are violations too.
  1. Schema (kube_schema.py: the OpenAPI document translated to JSON
     Schema once at start, checked with python3-jsonschema): JSON types,
     int32/int64 ranges, required properties, unknown fields refused
     (strict field validation), Quantity and Time formats; null counts as
     absent. Added to it, the API server's checks of one field (names,
     enums, lengths, list limits: kube_dra_common.field_rules).
  2. Then the API server's checks across fields (kube_dra_rules.py, after
     pkg/apis/resource/validation of the release): metadata (kube_meta.py),
     unions, uniqueness, counts per slice and device, references to a
     claim's requests, immutable fields, the allocation. Nodes get the
     metadata checks only.

Control API (HTTPS on the same port, no authentication, JSON)
  GET    /emulator/violations  [{time, method, path, message, object}]
                               (object: the body sent, parsed, or its text
                               when it is not JSON)
  DELETE /emulator/violations  clears them
  GET    /emulator/requests    [{time, method, path (with query), status,
                               user_agent, duration}] of every API request
                               (control calls excluded; a watch is listed
                               when it starts, duration null; status -1: a
                               close fault dropped it)
  DELETE /emulator/requests    clears them
  POST   /emulator/faults      {"status":503, "count":N, "methods":["PUT"],
                               "path_prefix":"/apis/resource.k8s.io/v1/...",
                               "retry_after_seconds":S, "message":M}: the next
                               N matching requests (count < 0: all) get that
                               status (a Status body); {"close":true,...}
                               drops the connection unanswered instead;
                               {"delay_seconds":S,...} delays them (then
                               answers normally unless status/close is set);
                               {"answer_delay_seconds":S,...} serves them at
                               once (a write is stored, its watch events go
                               out) but holds the answer S seconds.
                               Faults apply before authentication, in the
                               order posted; the first match is taken.
  GET    /emulator/faults      the pending faults; DELETE clears them
  POST   /emulator/drop-taints {"enabled":true|false}
  POST   /emulator/compact     forgets the watch history: a watch from an
                               older resourceVersion gets 410
  POST   /emulator/close-watches  {"abrupt":false} ends every open watch
                               cleanly (as on a watch timeout); abrupt:true
                               drops their connections instead
  GET    /emulator/state       {openWatches, objects per kind, dropTaints}
  GET    /emulator/pools       [{driver, pool, generation,
                               resourceSliceCount, slices, complete,
                               devices, counterSets, problems}]: each pool
                               of the stored ResourceSlices as the
                               scheduler judges it (kube_pool_rules.py:
                               complete, device and counter set names
                               unique in the pool, consumesCounters naming
                               sets and counters it defines, within them);
                               problems [] when usable
  POST   /emulator/allocate    {"namespace","name","driver","node"?,
                               "requests":[{"name","count"?,"attributes"?:
                               {"profile":"1g.10gb",...},"device"?}]}:
                               allocates the stored claim as the scheduler
                               would (kube_allocator.py: usable pools only,
                               first fit in pool order, no device held by
                               another claim or tainted NoSchedule, shared
                               counters respected) and writes its
                               status.allocation; answers the claim, or 409
                               {"error"} naming the request that does not
                               fit
  Objects are created, changed and deleted behind a client's back with the
  normal API (tests have the token); kube_client.py is a small client.

Files (tests/kube/)
  apiserver.py (this: CLI, start-up), kube_certs.py, kube_http.py (HTTPS,
  routing, auth, faults), kube_discovery.py, kube_watch.py, kube_api.py
  (verbs, server-set fields), kube_store.py, kube_selectors.py,
  kube_control.py (control API), kube_schema.py, kube_fields.py (field
  errors, formats), kube_meta.py, kube_dra_*.py, kube_slice_rules.py,
  kube_claim_rules.py (validation), kube_pool_rules.py (a pool across its
  slices, as the scheduler judges it), kube_allocator.py (allocation as
  the scheduler does it); kube_client.py (the client).
"""

import argparse
import json
import os
import signal
import ssl
import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import kube_api
import kube_certs
import kube_control
import kube_dra_common
import kube_dra_rules
import kube_http
import kube_schema
import kube_store

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCHEMAS = os.path.join(os.path.dirname(_ROOT), "shared", "k8s-openapi")
# The OpenAPI document of each release; the newest one older releases use.
SCHEMA_OF_RELEASE = {"1.36": "resource.k8s.io-v1-release-1.36.json"}
OLDER_SCHEMA = "resource.k8s.io-v1.json"


def parse_args(argv):
  """The command line (see the module docstring); exits on a bad one."""
  parser = argparse.ArgumentParser(
      description="Kubernetes API server emulator for tests (see the module "
      "docstring of apiserver.py).")
  parser.add_argument("--dir", required=True,
                      help="directory for CA, certificates, token, "
                      "kubeconfigs")
  parser.add_argument("--port", type=int, default=0,
                      help="port on 127.0.0.1 (0: any free one)")
  parser.add_argument("--schema",
                      help="OpenAPI v3 document of resource.k8s.io/v1")
  parser.add_argument("--kube-version", choices=["1.34", "1.35", "1.36"],
                      default=os.environ.get("GDP_EMULATOR_KUBE_VERSION",
                                             "1.35"))
  parser.add_argument("--drop-taints", action="store_true",
                      help="drop spec.devices[].taints from ResourceSlices")
  parser.add_argument("--drop-consumable-capacity", action="store_true",
                      help="drop allowMultipleAllocations and requestPolicy "
                      "from ResourceSlices (always with 1.34 and 1.35)")
  parser.add_argument("--drop-partitionable-devices", action="store_true",
                      help="drop sharedCounters and consumesCounters from "
                      "ResourceSlices (always with 1.34 and 1.35)")
  parser.add_argument("--history", type=int, default=1000,
                      help="watch events kept")
  parser.add_argument("--bookmark-seconds", type=float, default=5.0,
                      help="idle time before a BOOKMARK event")
  args = parser.parse_args(argv)
  if args.kube_version not in ("1.34", "1.35", "1.36"):
    parser.error("GDP_EMULATOR_KUBE_VERSION: %s is not 1.34, 1.35 or 1.36" %
                 args.kube_version)
  if args.kube_version != "1.36":
    args.drop_consumable_capacity = True
    args.drop_partitionable_devices = True
  if args.schema is None:
    args.schema = os.path.join(SCHEMAS, SCHEMA_OF_RELEASE.get(
        args.kube_version, OLDER_SCHEMA))
  return args


def _exit_now(signum, frame):
  del signum, frame
  try:
    sys.stdout.flush()
    sys.stderr.flush()
  finally:
    os._exit(0)  # pylint: disable=protected-access


def main(argv):
  """Runs the server until a signal ends the process; 1 if it cannot."""
  args = parse_args(argv)
  signal.signal(signal.SIGTERM, _exit_now)
  signal.signal(signal.SIGINT, _exit_now)
  directory = os.path.abspath(args.dir)
  creds = kube_certs.ensure_credentials(directory)
  minor = int(args.kube_version.split(".")[1])
  schema = None
  if os.path.exists(args.schema):
    schema = kube_schema.Schema.load(
        args.schema, kube_dra_common.field_rules(minor),
        kube_dra_common.CHECKS)
  else:
    sys.stderr.write("apiserver.py: schema %s not found; skipping OpenAPI "
                     "schema checks\n" % args.schema)
    sys.stderr.flush()
  store = kube_store.Store(history=args.history)
  api = kube_api.Api(store, schema, kube_dra_rules.DraRules(minor),
                     drop_taints=args.drop_taints,
                     drop_consumable_capacity=args.drop_consumable_capacity,
                     drop_partitionable_devices=(
                         args.drop_partitionable_devices))
  state = kube_control.State(api, creds["token_value"])
  context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
  context.load_cert_chain(creds["cert"], creds["key"])
  context.set_alpn_protocols(["http/1.1"])
  try:
    server = kube_http.Server(("127.0.0.1", args.port), context, state,
                              minor, args.bookmark_seconds)
  except OSError as e:
    sys.stderr.write("apiserver.py: cannot listen on 127.0.0.1:%d: %s\n" %
                     (args.port, e))
    return 1
  port = server.server_address[1]
  kube_certs.write_kubeconfigs(directory, port, creds["token_value"])
  ready = {"event": "listening", "port": port,
           "kubeconfig": os.path.join(directory, "kubeconfig"),
           "ca": creds["ca"], "token": creds["token_value"]}
  sys.stdout.write(json.dumps(ready, separators=(",", ":")) + "\n")
  sys.stdout.flush()
  server.serve_forever(poll_interval=0.5)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
