"""The runtime tests' fixture: the built binaries, the kubelet emulator
(`dpctl kubelet --json`), the plugin on the fake NVML, fixture roots with
real device nodes, and what a container reports about its GPUs.

Paths come from the environment run.py sets: GDP_BUILD_DIR (the CMake
build) and GDP_SOURCE_DIR (the repository).
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import yaml

import podman

SOURCE = os.environ.get("GDP_SOURCE_DIR", os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("GDP_BUILD_DIR", os.path.join(SOURCE, "build"))
PLUGIN = os.path.join(BUILD, "src", "gpu-device-plugin")
DPCTL = os.path.join(BUILD, "dpctl", "dpctl")
FAKE_NVML_TOOL = os.path.join(BUILD, "fake_nvml", "fake-nvml")
FAKE_NVML_LIBDIR = os.path.join(BUILD, "fake_nvml", "lib")
FAKE_NVML_LIB = os.path.join(FAKE_NVML_LIBDIR, "libnvidia-ml.so.1")
MACHINES = os.path.join(SOURCE, "fake_nvml", "machines")
DRIVER_VERSION = "550.54.15"  # every shipped machine's
# Generous: a loaded 2-core machine.
TIMEOUT = 60

# The fixture's device numbers (fake_nvml/rootfs.h).
NVIDIA_MAJOR = 195
UVM_MAJOR = 120
CAPS_MAJOR = 121
CONTROL_NODES = {
    "/dev/nvidiactl": (NVIDIA_MAJOR, 255),
    "/dev/nvidia-uvm": (UVM_MAJOR, 0),
    "/dev/nvidia-uvm-tools": (UVM_MAJOR, 1),
    "/dev/nvidia-modeset": (NVIDIA_MAJOR, 254),
}
VOLUME_MOUNTS_ROOT = "/var/run/nvidia-container-devices"
NVML_IN_CONTAINER = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"


def machine_file(name):
  return os.path.join(MACHINES, name + ".yaml")


def mig_cap_minor(gpu_minor, gi, ci=None):
  """nvidia-cap<N> of a GPU instance or compute instance, numbered as the
  driver's mig-minors lists them (fake_nvml/README.md): N = 3 + 135 x
  minor + 9 x gi, + 1 + ci for a compute instance."""
  base = 3 + 135 * gpu_minor + 9 * gi
  return base if ci is None else base + 1 + ci


# Every Process started, so that an interrupted run still stops them all.
STARTED = []


def stop_all():
  """Stops every Process still running."""
  for p in reversed(STARTED):
    p.stop()


class Process:
  """A subprocess whose stdout lines are read by a thread, so a test can
  wait for a line with a deadline. stderr goes to a file."""

  def __init__(self, argv, stderr_path, env=None, stdin=False):
    STARTED.append(self)
    self.argv = argv
    self.stderr_path = stderr_path
    with open(stderr_path, "wb") as err:
      self.proc = subprocess.Popen(
          argv, stdout=subprocess.PIPE, stderr=err, env=env,
          stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, text=True)
    self.lines = queue.Queue()
    self.reader = threading.Thread(target=self._read, daemon=True)
    self.reader.start()

  def _read(self):
    for line in self.proc.stdout:
      self.lines.put(line.rstrip("\n"))
    self.lines.put(None)

  def write_line(self, line):
    self.proc.stdin.write(line + "\n")
    self.proc.stdin.flush()

  def next_json(self, pred, timeout=TIMEOUT):
    """The next JSON line for which pred holds; None at the deadline or
    when the process closed its output."""
    deadline = time.monotonic() + timeout
    while True:
      left = deadline - time.monotonic()
      if left <= 0:
        return None
      try:
        line = self.lines.get(timeout=left)
      except queue.Empty:
        return None
      if line is None:
        self.lines.put(None)
        return None
      try:
        event = json.loads(line)
      except ValueError:
        continue
      if isinstance(event, dict) and pred(event):
        return event

  def stderr(self):
    with open(self.stderr_path, encoding="utf-8", errors="replace") as f:
      return f.read()

  def stop(self, sig=signal.SIGTERM, timeout=TIMEOUT):
    """Signals the process and waits; its exit code (killed at the
    deadline: -9)."""
    if self.proc.poll() is None:
      self.proc.send_signal(sig)
      try:
        self.proc.wait(timeout)
      except subprocess.TimeoutExpired:
        self.proc.kill()
        self.proc.wait()
    return self.proc.returncode


class Kubelet(Process):
  """`dpctl kubelet --dir DIR --json`: the kubelet's device manager."""

  def __init__(self, directory, stderr_path):
    super().__init__([DPCTL, "kubelet", "--dir", directory, "--json"],
                     stderr_path, stdin=True)
    if self.event("listening") is None:
      raise AssertionError("dpctl kubelet did not start: " + self.stderr())

  def event(self, name, resource=None, timeout=TIMEOUT):
    return self.next_json(
        lambda e: e.get("event") == name and
        (resource is None or e.get("resource") == resource), timeout)

  def allocate(self, resource, count, pod):
    """Admits `pod` asking for `count` of `resource`; the allocate (or
    allocate_failed) event."""
    self.write_line("allocate %s %d %s" % (resource, count, pod))
    return self.next_json(
        lambda e: e.get("event") in ("allocate", "allocate_failed") and
        e.get("pod") == pod)


class RuntimeTest(unittest.TestCase):
  """Base: a temporary directory, processes stopped and containers removed
  after each test."""

  def setUp(self):
    self.dir = tempfile.mkdtemp(prefix="gdp-runtime-")
    self.processes = []
    self.containers = []
    self.addCleanup(self._clean)

  def _clean(self):
    for name in self.containers:
      podman.podman("rm", "-f", "-t", "0", name, check=False)
    for p in reversed(self.processes):
      p.stop()
    shutil.rmtree(self.dir, ignore_errors=True)

  def path(self, *parts):
    return os.path.join(self.dir, *parts)

  def logs(self):
    """Every process's stderr, for failure messages."""
    return "".join("\n--- %s:\n%s" % (" ".join(p.argv[:2]), p.stderr())
                   for p in self.processes)

  def prepare_claim(self, kubelet, name, uid, driver="gpu.nvidia.com"):
    """Has `kubelet` (dpctl dra-kubelet) prepare claim ns/<name>/<uid>;
    fails the test unless the claim was prepared without an error. Returns
    the claim's answer (its devices) and its CDI device names."""
    kubelet.write_line("prepare %s ns/%s/%s" % (driver, name, uid))
    prepared = kubelet.next_json(
        lambda e: e.get("event") in ("prepare", "prepare_failed"))
    self.assertEqual((prepared or {}).get("event"), "prepare",
                     "%s%s" % (prepared, self.logs()))
    answer = prepared["claims"].get(uid, {})
    self.assertEqual(answer.get("error"), "", "%s%s" % (prepared,
                                                        self.logs()))
    names = [n for d in answer.get("devices", []) for n in d["cdi_ids"]]
    return answer, names

  def make_root(self, machine, driver=False):
    """`fake-nvml rootfs --device-nodes char` into <dir>/root; with
    `driver`, the fake NVML installed there as a driver would be (for CDI
    specs). Returns the root."""
    root = self.path("root")
    p = subprocess.run([FAKE_NVML_TOOL, "rootfs", "--device-nodes", "char",
                        "--machine", machine_file(machine), "--out", root],
                       capture_output=True, text=True, check=False,
                       timeout=TIMEOUT)
    self.assertEqual(p.returncode, 0, p.stderr)
    if driver:
      lib = os.path.join(root, "usr/lib/x86_64-linux-gnu")
      os.makedirs(lib, exist_ok=True)
      shutil.copy(FAKE_NVML_LIB,
                  os.path.join(lib, "libnvidia-ml.so." + DRIVER_VERSION))
      os.symlink("libnvidia-ml.so." + DRIVER_VERSION,
                 os.path.join(lib, "libnvidia-ml.so.1"))
    return root

  def start_kubelet(self):
    os.makedirs(self.path("kp"), exist_ok=True)
    kubelet = Kubelet(self.path("kp"), self.path("kubelet.err"))
    self.processes.append(kubelet)
    return kubelet

  def start_plugin(self, machine, args, root):
    """The plugin from the build on the fake NVML describing `machine`,
    with its sysfs and device nodes under `root`."""
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE_NVML_LIBDIR,
               FAKE_NVML_MACHINE=machine_file(machine))
    argv = [PLUGIN, "--kubelet-socket", self.path("kp", "kubelet.sock"),
            "--sysfs-root", os.path.join(root, "sys"), "--dev-root", root,
            "--proc-root", os.path.join(root, "proc"),
            "--state-dir", self.path("state")] + list(args)
    plugin = Process(argv, self.path("plugin.err"), env=env)
    self.processes.append(plugin)
    return plugin

  def registered(self, kubelet, resource):
    """Waits for `resource` to register and list its devices; the device
    IDs."""
    reg = kubelet.event("register", resource)
    self.assertIsNotNone(reg, "%s never registered%s" % (resource,
                                                         self.logs()))
    self.assertTrue(reg.get("ok"), "%s%s" % (reg, self.logs()))
    devices = kubelet.event("devices", resource)
    self.assertIsNotNone(devices, self.logs())
    return [d["id"] for d in devices["devices"]]

  def allocated(self, kubelet, resource, count, pod):
    a = kubelet.allocate(resource, count, pod)
    self.assertIsNotNone(a, "no answer for %s%s" % (pod, self.logs()))
    self.assertEqual(a["event"], "allocate", "%s%s" % (a, self.logs()))
    return a


def cgroup2_mount():
  """The host's cgroup2 mount point (root "/"), or None."""
  with open("/proc/self/mountinfo", encoding="utf-8") as f:
    for line in f:
      fields = line.split()
      dash = fields.index("-")
      if fields[dash + 1] == "cgroup2" and fields[3] == "/":
        return fields[4]
  return None
