#!/usr/bin/python3
"""Fault, drop-taints and life-cycle tests of the API server emulator.

Run from apiserver_test.py (or alone): injected faults (status, dropped
connection, delay, delayed answer), the drop-taints switch, SIGTERM with a watch open, a
restart on a fixed port with the same --dir, no schema and a busy
port.
"""

import http.client
import os
import signal
import socket
import ssl
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from emulator_fixture import Emulator, gpu_slice
from kube_client import Client

SLICES = "/apis/resource.k8s.io/v1/resourceslices"

class FaultTest(unittest.TestCase):
  """Faults, drop-taints and state, on an emulator of its own."""

  def setUp(self):
    self.emu = Emulator()
    self.emu.start()
    self.c = self.emu.client

  def tearDown(self):
    self.emu.__exit__(None, None, None)

  def test_status_faults(self):
    self.emu.control("POST", "faults", {
        "status": 503, "count": 2, "methods": ["GET"],
        "path_prefix": SLICES, "retry_after_seconds": 1})
    for _ in range(2):
      code, body = self.c.request("GET", SLICES)
      self.assertEqual((code, body["reason"]), (503, "ServiceUnavailable"))
    self.assertEqual(self.c.request("GET", SLICES)[0], 200)
    self.assertEqual(self.c.request("GET", "/api/v1/nodes")[0], 200)
    self.assertEqual(self.emu.control("GET", "faults"), [])

  def test_close_and_delay_faults(self):
    self.emu.control("POST", "faults", {"close": True, "count": 1,
                                        "methods": ["PUT"]})
    ctx = ssl.create_default_context(cafile=self.emu.info["ca"])
    conn = http.client.HTTPSConnection("127.0.0.1", self.emu.port,
                                       context=ctx, timeout=10)
    conn.request("PUT", "/api/v1/nodes/x", body=b"{}",
                 headers={"Authorization": "Bearer " + self.emu.info["token"]})
    with self.assertRaises((http.client.RemoteDisconnected,
                            ConnectionError, ssl.SSLError)):
      conn.getresponse()
    conn.close()
    self.emu.control("POST", "faults", {"delay_seconds": 0.5, "count": 1})
    start = time.monotonic()
    self.assertEqual(self.c.request("GET", "/api/v1/nodes")[0], 200)
    self.assertGreaterEqual(time.monotonic() - start, 0.45)

  def test_answer_delay_fault_stores_first(self):
    # The write is stored (and seen by others) before its answer comes.
    self.emu.control("POST", "faults", {"answer_delay_seconds": 1.0,
                                        "count": 1, "methods": ["POST"]})
    done = []
    writer = threading.Thread(target=lambda: done.append(
        self.c.create("nodes", {"metadata": {"name": "slow-answer"}})))
    start = time.monotonic()
    writer.start()
    with Client.from_kubeconfig(os.path.join(self.emu.dir,
                                             "kubeconfig")) as other:
      while time.monotonic() - start < 5:
        code, _ = other.request("GET", "/api/v1/nodes/slow-answer")
        if code == 200:
          break
        time.sleep(0.02)
      self.assertEqual(code, 200)
    self.assertLess(time.monotonic() - start, 0.9)
    self.assertEqual(done, [])
    writer.join()
    self.assertGreaterEqual(time.monotonic() - start, 0.95)
    self.assertEqual(done[0]["metadata"]["name"], "slow-answer")

  def test_drop_taints_toggle(self):
    self.emu.control("POST", "drop-taints", {"enabled": True})
    stored = self.c.create("resourceslices", gpu_slice("dt-node", devices=65))
    self.assertNotIn("taints", stored["spec"]["devices"][0])
    self.emu.control("POST", "drop-taints", {"enabled": False})
    kept = self.c.create("resourceslices", gpu_slice("dt-node"))
    self.assertIn("taints", kept["spec"]["devices"][0])
    state = self.emu.control("GET", "state")
    self.assertEqual((state["dropTaints"], state["objects"]["ResourceSlice"]),
                     (False, 2))
    self.assertEqual(self.emu.violations(), [])


class LifecycleTest(unittest.TestCase):
  """Start, stop and restart."""

  def test_sigterm_with_open_watch_exits_zero_quickly(self):
    emu = Emulator()
    emu.start()
    events = []
    watcher = threading.Thread(target=lambda: events.extend(
        emu.client.watch("resourceslices", read_timeout=30)), daemon=True)
    watcher.start()
    deadline = time.monotonic() + 20
    while emu.control("GET", "state")["openWatches"] < 1:
      self.assertLess(time.monotonic(), deadline)
      time.sleep(0.05)
    code, elapsed = emu.stop(signal.SIGTERM)
    self.assertEqual(code, 0)
    # Exits within milliseconds; the bound leaves room for a loaded machine.
    self.assertLess(elapsed, 3.0)
    watcher.join(10)
    emu.__exit__(None, None, None)

  def test_fixed_port_restart_reuses_ca_and_token(self):
    directory = tempfile.mkdtemp(prefix="kube-emu-fixed-")
    port = _free_port()
    first = Emulator(directory=directory, port=port)
    first.start()
    ca = _read(first.info["ca"])
    token = first.info["token"]
    self.assertEqual(first.port, port)
    self.assertEqual(first.stop(signal.SIGINT)[0], 0)
    second = Emulator(directory=directory, port=port)
    second.start()
    try:
      self.assertEqual(_read(second.info["ca"]), ca)
      self.assertEqual(second.info["token"], token)
      self.assertEqual(second.client.request("GET", "/version")[0], 200)
    finally:
      second.stop()
      first.__exit__(None, None, None)
      second.own_dir = True
      second.__exit__(None, None, None)

  def test_schema_absent_still_runs(self):
    with Emulator("--schema", "/nonexistent/schema.json") as emu:
      self.assertIn("skipping OpenAPI schema checks", emu.stderr())
      loose = gpu_slice("ns-node")
      loose["spec"]["devices"][0]["unknownField"] = 1
      self.assertEqual(emu.client.request("POST", SLICES, loose)[0], 201)
      code, body = emu.client.request("POST", SLICES,
                                      gpu_slice("ns-node", devices=129,
                                                taint=False))
      self.assertEqual((code, body["reason"]), (422, "Invalid"))
      self.assertEqual(len(emu.violations()), 1)

  def test_busy_port(self):
    with Emulator() as emu:
      busy = Emulator(port=emu.port)
      with self.assertRaises(RuntimeError):
        busy.start()
      self.assertIn("cannot listen", busy.stderr())
      busy.__exit__(None, None, None)


def _read(path):
  with open(path, "rb") as f:
    return f.read()


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


if __name__ == "__main__":
  unittest.main()
