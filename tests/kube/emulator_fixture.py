"""Test helpers: run apiserver.py as a subprocess; build DRA objects.

  with Emulator("--kube-version", "1.34") as emu:
    emu.client.create("resourceslices", gpu_slice("node-a"))

Emulator starts the server with its own temporary --dir (or a given one)
and port 0 (or a given port), waits for its "listening" line (30 s at
most) and gives a kube_client.Client for it. stop() sends SIGTERM and
returns (exit code, seconds it took).
"""

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# pylint: disable=wrong-import-position
from kube_client import Client

DRIVER = "gpu.nvidia.com"
SERVER = os.path.join(HERE, "apiserver.py")


class Emulator:
  """One running emulator; see the module docstring."""

  def __init__(self, *args, directory=None, port=0):
    self.args = list(args)
    self.own_dir = directory is None
    self.dir = directory or tempfile.mkdtemp(prefix="kube-emu-")
    self.port = port
    self.proc = None
    self.info = None
    self.client = None

  def __enter__(self):
    self.start()
    return self

  def __exit__(self, *exc):
    self.stop()
    if self.own_dir:
      shutil.rmtree(self.dir, ignore_errors=True)

  def start(self, timeout=30):
    """Starts the server; its "listening" line as a dict (RuntimeError)."""
    self.stderr_path = os.path.join(self.dir, "stderr-%d.txt" % time.time_ns())
    os.makedirs(self.dir, exist_ok=True)
    with open(self.stderr_path, "wb") as err:
      self.proc = subprocess.Popen(
          [sys.executable, SERVER, "--dir", self.dir, "--port",
           str(self.port)] + self.args,
          stdout=subprocess.PIPE, stderr=err)
    line = read_line(self.proc.stdout, timeout)
    if not line:
      self.proc.kill()
      raise RuntimeError("emulator did not start: %s" % self.stderr())
    self.info = json.loads(line)
    self.port = self.info["port"]
    self.client = Client.from_kubeconfig(self.info["kubeconfig"])
    return self.info

  def stderr(self):
    """What the server wrote on stderr so far."""
    with open(self.stderr_path, encoding="utf-8", errors="replace") as f:
      return f.read()

  def stop(self, sig=signal.SIGTERM):
    """(exit code, seconds to exit); None if not running."""
    if self.proc is None:
      return None
    if self.client is not None:
      self.client.close()
    start = time.monotonic()
    self.proc.send_signal(sig)
    try:
      code = self.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
      self.proc.kill()
      code = self.proc.wait()
    elapsed = time.monotonic() - start
    self.proc.stdout.close()
    self.proc = None
    return code, elapsed

  def control(self, method, name, body=None):
    """A control API call (see apiserver.py); its JSON answer."""
    return self.client.control(method, name, body)

  def violations(self):
    """The recorded violations."""
    return self.control("GET", "violations")


def read_line(pipe, timeout):
  """The next line of pipe (str), or None at EOF or after timeout seconds."""
  sel = selectors.DefaultSelector()
  sel.register(pipe, selectors.EVENT_READ)
  deadline = time.monotonic() + timeout
  data = b""
  while not data.endswith(b"\n"):
    left = deadline - time.monotonic()
    if left <= 0 or not sel.select(left):
      return None
    chunk = os.read(pipe.fileno(), 4096)
    if not chunk:
      return None
    data += chunk
  return data.decode()


def gpu_device(index, taint=True):
  """A GPU as our driver publishes it."""
  device = {
      "name": "gpu-%d" % index,
      "attributes": {
          "type": {"string": "gpu"},
          "uuid": {"string": "GPU-1b2c3d4e-0000-1111-2222-%012d" % index},
          "productName": {"string": "NVIDIA A100-SXM4-80GB"},
          "brand": {"string": "Nvidia"},
          "architecture": {"string": "Ampere"},
          "cudaComputeCapability": {"version": "8.0.0"},
          "driverVersion": {"version": "550.54.15"},
          "cudaDriverVersion": {"version": "12.4.0"},
          "resource.kubernetes.io/pciBusID": {"string":
                                              "0000:%02x:00.0" % (index + 7)},
          "resource.kubernetes.io/pcieRoot": {"string": "pci0000:%02x" % index},
          "resource.kubernetes.io/numaNode": {"int": index // 4},
      },
      "capacity": {"memory": {"value": "80Gi"}},
  }
  if taint:
    device["taints"] = [{"key": "gpu.nvidia.com/xid", "value": "79",
                         "effect": "NoSchedule"}]
  return device


def gpu_slice(node, devices=8, taint=True, name=None, node_uid=None):
  """A ResourceSlice with `devices` GPUs on node, owned by the Node."""
  meta = {"ownerReferences": [{
      "apiVersion": "v1", "kind": "Node", "name": node,
      "uid": node_uid or "6f1a2b3c-0000-4000-8000-000000000001",
      "controller": True}]}
  if name:
    meta["name"] = name
  else:
    meta["generateName"] = "%s-%s-" % (node, DRIVER)
  return {
      "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
      "metadata": meta,
      "spec": {
          "driver": DRIVER, "nodeName": node,
          "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
          "devices": [gpu_device(i, taint=(taint and i == 0))
                      for i in range(devices)],
      },
  }


def claim(name, namespace="default"):
  """A ResourceClaim asking for one GPU of our DeviceClass."""
  return {
      "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
      "metadata": {"name": name, "namespace": namespace},
      "spec": {"devices": {"requests": [{
          "name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}},
  }


def device_class(name=DRIVER):
  """A DeviceClass selecting our driver's devices."""
  return {
      "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
      "metadata": {"name": name},
      "spec": {"selectors": [{"cel": {"expression":
                                      "device.driver == '%s'" % DRIVER}}],
               "extendedResourceName": "nvidia.com/gpu"},
  }
