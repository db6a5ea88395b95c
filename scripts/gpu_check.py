"""The run half of scripts/gpu-check.sh, run from its pack (check.py there).

  check.py --pack DIR OUT [--fake MACHINE] [--idle-seconds N]

On a machine with a real GPU (or here with --fake, against the fake NVML)
it runs, in at most 5 minutes and without changing any GPU setting:

  nvml_report    gpu-device-plugin nvml-report: what the driver answers to
                 every NVML read we rely on (health signals, events, MIG
                 profiles and placements, memory-limit calls), with codes
  discovery      gpu-device-plugin discover against nvidia-smi (with --fake:
                 against the machine file); every difference listed
  device_plugin  the daemon registered with dpctl kubelet: its devices,
                 Allocate, GetPreferredAllocation, the CDI spec's files (each
                 must exist), Allocate p50/p99, idle cost (CPU, wakeups,
                 threads), SIGTERM to exit
  dra            the daemon with --device-api=dra against the API server
                 emulator: its ResourceSlice's attributes against the
                 reference, a claim prepared and unprepared by dpctl
                 dra-kubelet

and writes OUT/report.json, OUT/summary.txt and each process's log. Every
step is bounded; a step that fails is recorded and the next one runs.
Exit status: 0 when every step passed, 1 when one failed, 2 usage.
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import xml.etree.ElementTree as ET

TOTAL_SECONDS = 290  # the whole check; the issue allows 5 minutes
DRIVER = "gpu.nvidia.com"
NODE = "gpu-check-node"


class Check:
  """The run: paths, the deadline, the report being built."""

  def __init__(self, args):
    self.pack = os.path.abspath(args.pack)
    self.out = os.path.abspath(args.out)
    self.fake = args.fake
    self.idle_seconds = args.idle_seconds
    self.start = time.monotonic()
    self.deadline = self.start + TOTAL_SECONDS
    self.work = tempfile.mkdtemp(prefix="gpu-check-")
    self.procs = []
    self.report = {"steps": {}, "fake": self.fake}
    os.makedirs(self.out, exist_ok=True)
    self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    lib = os.path.join(self.pack, "lib")
    if self.fake:
      machine = os.path.join(self.pack, "fake", "machines", self.fake + ".yaml")
      if not os.path.exists(machine):
        raise SystemExit("check.py: no machine file %s" % machine)
      self.machine = machine
      self.libpath = lib + ":" + os.path.join(self.pack, "fake")
      self.env["FAKE_NVML_MACHINE"] = machine
      self.env["FAKE_NVML_CONTROL"] = os.path.join(self.work, "control")
      self.env["FAKE_NVML_MIG_STATE"] = os.path.join(self.work, "mig-state")
      self.root = os.path.join(self.work, "root")
      self.run_tool(["fake-nvml", "rootfs", "--machine", machine, "--out",
                     self.root], 30)
      self.sysfs = os.path.join(self.root, "sys")
      self.dev_root = self.root
      # The fake installed as a driver would be: its NVML, and a libcuda,
      # so that CDI specs name driver files as on a node.
      import yaml  # pylint: disable=import-outside-toplevel
      with open(machine) as f:
        version = yaml.safe_load(f).get("driver_version", "550.54.15")
      libdir = os.path.join(self.root, "usr/lib/x86_64-linux-gnu")
      os.makedirs(libdir, exist_ok=True)
      for name in ("libnvidia-ml.so", "libcuda.so"):
        shutil.copy(os.path.join(self.pack, "fake", "libnvidia-ml.so.1"),
                    os.path.join(libdir, "%s.%s" % (name, version)))
        os.symlink("%s.%s" % (name, version),
                   os.path.join(libdir, name + ".1"))
      self.driver_root = self.root
    else:
      nvml_dir = find_nvml_dir()
      self.report["nvml_dir"] = nvml_dir
      self.libpath = lib + (":" + nvml_dir if nvml_dir else "")
      self.sysfs = "/sys"
      self.dev_root = "/"
      self.driver_root = "/"

  # Processes ---------------------------------------------------------------

  def left(self, limit):
    """Seconds a step may take: `limit`, or what is left of the run."""
    return max(1.0, min(limit, self.deadline - time.monotonic()))

  def argv(self, tool, args):
    loader = os.path.join(self.pack, "lib", "ld-linux-x86-64.so.2")
    if tool == "python3":
      return [loader, "--library-path", self.libpath,
              os.path.join(self.pack, "bin", "python3.11"), "-S"] + args
    return [loader, "--library-path", self.libpath,
            os.path.join(self.pack, "bin", tool)] + args

  def run_env(self):
    env = dict(self.env)
    env["PYTHONHOME"] = os.path.join(self.pack, "py")
    env["PYTHONPATH"] = (os.path.join(self.pack, "py", "site") + ":" +
                         os.path.join(self.pack, "kube"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["OPENSSL_MODULES"] = os.path.join(self.pack, "lib", "ossl-modules")
    env["OPENSSL_CONF"] = "/dev/null"
    return env

  def run_tool(self, argv, limit, stdin=None):
    """Runs a packed tool to its end: (exit code, stdout, stderr)."""
    tool, args = argv[0], argv[1:]
    p = subprocess.run(self.argv(tool, args), env=self.run_env(),
                       input=stdin, capture_output=True, text=True,
                       timeout=self.left(limit), check=False)
    return p.returncode, p.stdout, p.stderr

  def spawn(self, name, tool, args, stdin=False, stdout=None):
    """Starts a packed tool in the background, stderr to OUT/<name>.log."""
    log = open(os.path.join(self.out, name + ".log"), "wb")
    p = subprocess.Popen(self.argv(tool, args), env=self.run_env(),
                         stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                         stdout=stdout or log, stderr=log,
                         start_new_session=True)
    p.log_name = name
    self.procs.append(p)
    return p

  def stop(self, p, limit=10):
    """SIGTERM, then SIGKILL after `limit` s: (exit code, seconds to exit)."""
    if p.poll() is not None:
      return p.returncode, 0.0
    start = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
      code = p.wait(timeout=limit)
    except subprocess.TimeoutExpired:
      p.kill()
      code = p.wait()
    return code, round(time.monotonic() - start, 3)

  def cleanup(self):
    for p in self.procs:
      if p.poll() is None:
        p.kill()
        p.wait()
    shutil.rmtree(self.work, ignore_errors=True)

  def daemon_flags(self):
    return ["--sysfs-root", self.sysfs, "--dev-root", self.dev_root,
            "--driver-root", self.driver_root]


def find_nvml_dir():
  """The directory of the machine's libnvidia-ml.so.1, or None."""
  found = []
  for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
    try:
      out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True,
                           timeout=10, check=False).stdout
    except OSError:
      continue
    for line in out.splitlines():
      m = re.search(r"libnvidia-ml\.so\.1 .*=> (\S+)", line)
      if m and "x86-64" in line:
        found.append(os.path.dirname(m.group(1)))
    break
  for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64",
            "/usr/local/nvidia/lib", "/usr/lib"):
    if os.path.exists(os.path.join(d, "libnvidia-ml.so.1")):
      found.append(d)
  return found[0] if found else None


# The reference: nvidia-smi on a real machine, the machine file on the fake.


def smi_reference(check):
  """What nvidia-smi says: driver, CUDA, and each GPU."""
  smi = shutil.which("nvidia-smi")
  if smi is None:
    raise RuntimeError("nvidia-smi not found")
  xml = subprocess.run([smi, "-q", "-x"], capture_output=True, text=True,
                       timeout=check.left(60), check=True).stdout
  with open(os.path.join(check.out, "nvidia-smi-q.xml"), "w") as f:
    f.write(xml)
  root = ET.fromstring(xml)
  cc = {}
  q = subprocess.run([smi, "--query-gpu=uuid,compute_cap",
                      "--format=csv,noheader"], capture_output=True, text=True,
                     timeout=check.left(30), check=False)
  for line in q.stdout.splitlines():
    parts = [p.strip() for p in line.split(",")]
    if len(parts) == 2:
      cc[parts[0]] = parts[1]
  ref = {"driver_version": root.findtext("driver_version"),
         "cuda_version": root.findtext("cuda_version"), "gpus": []}
  for g in root.findall("gpu"):
    bus = (g.findtext("pci/pci_bus_id") or "").lower()
    short = bus[-12:] if len(bus) > 12 else bus  # 0000:18:00.0
    numa = None
    try:
      with open("/sys/bus/pci/devices/%s/numa_node" % short) as f:
        numa = int(f.read().strip())
    except (OSError, ValueError):
      pass
    mem = g.findtext("fb_memory_usage/total") or ""
    uuid = g.findtext("uuid")
    ref["gpus"].append({
        "name": g.findtext("product_name"), "uuid": uuid,
        "minor": int_or_none(g.findtext("minor_number")),
        "memory_mib": int_or_none(mem.split()[0]) if mem else None,
        "pci_bus_id": short, "numa_node": numa,
        "compute_capability": cc.get(uuid),
        "mig_mode": (g.findtext("mig_mode/current_mig") or "").lower()})
  return ref


def fake_reference(check):
  """What the fake's machine file says (the fake's ground truth)."""
  import yaml  # pylint: disable=import-outside-toplevel
  with open(check.machine) as f:
    m = yaml.safe_load(f)
  cuda = m.get("cuda_driver_version", 0)
  ref = {"driver_version": m.get("driver_version"),
         "cuda_version": "%d.%d" % (cuda // 1000, cuda % 1000 // 10),
         "gpus": []}
  for g in m.get("gpus", []):
    ref["gpus"].append({
        "name": g.get("name"), "uuid": g.get("uuid"), "minor": g.get("minor"),
        "memory_mib": g.get("memory_mib"),
        "pci_bus_id": str(g.get("bus_id", "")).lower(),
        "numa_node": g.get("numa_node"),
        "compute_capability": g.get("compute_capability"),
        "mig_mode": g.get("mig_mode", "disabled")})
  return ref


def semver(version):
  """A driver version as a DRA version attribute: "580.159.04" ->
  "580.159.4" (semantic versions have no leading zeros; NVIDIA's driver
  publishes it so too)."""
  if not version:
    return version
  parts = version.split(".")
  while len(parts) < 3:
    parts.append("0")
  return ".".join(str(int(p)) if p.isdigit() else p for p in parts[:3])


def int_or_none(text):
  try:
    return int(text)
  except (TypeError, ValueError):
    return None


# Steps ---------------------------------------------------------------------


def step_nvml_report(check):
  code, out, err = check.run_tool(
      ["gpu-device-plugin"] + check.daemon_flags() +
      ["nvml-report", "--cgroup", "/sys/fs/cgroup"], 60)
  if code != 0:
    raise RuntimeError("nvml-report exited %d: %s" % (code, err.strip()))
  report = json.loads(out)
  with open(os.path.join(check.out, "nvml-report.json"), "w") as f:
    json.dump(report, f, indent=1)
  summary = {"library": report.get("library"),
             "entry_points": report.get("entry_points"), "gpus": []}
  for g in report.get("gpus", []):
    failed = {}
    for group in ("signals",):
      for name, r in g.get(group, {}).items():
        if isinstance(r, dict) and not r.get("ok", True):
          failed[name] = r.get("code")
    for name, r in g.get("events", {}).get("register", {}).items():
      if not r.get("ok"):
        failed["register_" + name] = r.get("code")
    links = g.get("signals", {}).get("nvlink_active", [])
    profiles = [p for p in g.get("mig", {}).get("profiles", []) if "id" in p]
    summary["gpus"].append({
        "uuid": g.get("uuid", {}).get("value"),
        "not_answered": failed,
        "nvlinks": sum(1 for l in links if l.get("ok")),
        "recovery_action": g.get("signals", {}).get("reset_markers", {})
                           .get("value", {}).get("recovery_action"),
        "mig_profiles": ["%d:%dslice/%dMiB x%d placements=%s" % (
            p["profile"], p["slices"], p["memory_mib"], p["instances"],
            p.get("placements", {}).get("value", p.get("placements")))
                         for p in profiles],
        "memory_limits": g.get("memory_limits")})
  return summary


HOST_COMMANDS = [
    "uname -a", "cat /proc/driver/nvidia/version", "nvidia-smi",
    "nvidia-smi -q", "nvidia-smi mig -lgip", "nvidia-smi mig -lgipp",
    "nvidia-smi topo -m", "ls -la /dev/nvidia* /dev/nvidia-caps",
    "cat /proc/driver/nvidia-caps/mig-minors",
    "ls -R /proc/driver/nvidia/capabilities", "ldconfig -p",
    "grep cgroup /proc/self/mountinfo", "cat /proc/self/cgroup",
    "ls -la /usr/local/nvidia /usr/local/nvidia/lib64"]


def step_host(check):
  """Read-only facts of the machine, for comparing with the fake."""
  path = os.path.join(check.out, "host.txt")
  done = 0
  with open(path, "w") as f:
    for cmd in HOST_COMMANDS:
      try:
        p = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True,
                           timeout=check.left(20), check=False)
        text = p.stdout + p.stderr
        if cmd == "ldconfig -p":
          text = "\n".join(l for l in text.splitlines()
                           if "nvidia" in l or "cuda" in l)
        f.write("$ %s  (exit %d)\n%s\n\n" % (cmd, p.returncode, text))
        done += 1
      except (OSError, subprocess.TimeoutExpired) as e:
        f.write("$ %s\n%s\n\n" % (cmd, e))
  return {"commands": done, "file": "host.txt"}


def step_discovery(check):
  ref = fake_reference(check) if check.fake else smi_reference(check)
  code, out, err = check.run_tool(
      ["gpu-device-plugin"] + check.daemon_flags() + ["discover"], 60)
  if code != 0:
    raise RuntimeError("discover exited %d: %s" % (code, err.strip()))
  ours = json.loads(out)
  with open(os.path.join(check.out, "discover.json"), "w") as f:
    json.dump(ours, f, indent=1)
  diffs = []
  if ours.get("driver_version") != ref["driver_version"]:
    diffs.append("driver version: ours %r, reference %r" %
                 (ours.get("driver_version"), ref["driver_version"]))
  cuda = ours.get("cuda_driver_version") or 0
  cuda_text = "%d.%d" % (cuda // 1000, cuda % 1000 // 10)
  if cuda_text != ref["cuda_version"]:
    diffs.append("CUDA version: ours %s, reference %r" %
                 (cuda_text, ref["cuda_version"]))
  by_uuid = {g["uuid"]: g for g in ours.get("gpus", [])}
  if len(ours.get("gpus", [])) != len(ref["gpus"]):
    diffs.append("GPU count: ours %d, reference %d" %
                 (len(ours.get("gpus", [])), len(ref["gpus"])))
  for r in ref["gpus"]:
    g = by_uuid.get(r["uuid"])
    if g is None:
      diffs.append("GPU %s: not discovered" % r["uuid"])
      continue
    mine = {"name": g.get("name"), "minor": g.get("minor"),
            "memory_mib": (g.get("memory_bytes") or 0) // (1024 * 1024),
            "pci_bus_id": str(g.get("pci_bus_id", "")).lower(),
            "numa_node": g.get("numa_node"),
            "compute_capability": g.get("compute_capability"),
            "mig_mode": "enabled" if g.get("mig_enabled") else "disabled"}
    for key, value in mine.items():
      want = r.get(key)
      if want is None:
        continue
      if key == "mig_mode" and want not in ("enabled", "disabled"):
        continue  # N/A: a GPU without MIG
      if key == "numa_node" and want == -1 and value in (None, -1):
        continue
      if value != want:
        diffs.append("GPU %s %s: ours %r, reference %r" %
                     (r["uuid"], key, value, want))
  return {"gpus": len(ours.get("gpus", [])), "reference": ref,
          "differences": diffs, "ok": not diffs}


def step_hook(check, reference):
  """gdp-cdi-hook asked for a limit must fail closed, with one line naming
  why, where the driver cannot set limits (before R615). Run only where the
  driver lacks the memory-limit calls: the check never sets a limit."""
  code, out, err = check.run_tool(
      ["gpu-device-plugin", "--driver-root", check.driver_root,
       "nvml-report"], 60)
  report = json.loads(out) if code == 0 else {}
  has_limits = report.get("entry_points", {}).get("memory_limits")
  driver_major = int((report.get("driver_version", {}).get("value") or
                      "0").split(".")[0])
  if has_limits and driver_major >= 615 and not check.fake:
    return {"skipped": "the driver has the memory-limit calls; the check "
                       "never sets a limit", "ok": True}
  uuid = reference["gpus"][0]["uuid"] if reference["gpus"] else "GPU-none"
  bundle = os.path.join(check.work, "bundle")
  os.makedirs(bundle, exist_ok=True)
  hook = os.path.join(check.pack, "bin", "gdp-cdi-hook")
  args = ["gdp-cdi-hook", "apply-memory-limits", "--driver-root",
          check.driver_root, "--share", "gpu-check,%s,1024" % uuid]
  with open(os.path.join(bundle, "config.json"), "w") as f:
    json.dump({"ociVersion": "1.0.2", "hooks": {"createRuntime": [
        {"path": hook, "args": args}]}}, f)
  # The "container": a sleeping process in a cgroup of its own under the
  # cgroup2 root where one can be made (the hook refuses the root cgroup),
  # else this process.
  cgroup = os.path.join("/sys/fs/cgroup", "gpu-check-%d" % os.getpid())
  sleeper = None
  pid = os.getpid()
  if not check.fake and os.path.exists("/sys/fs/cgroup/cgroup.procs"):
    try:
      os.mkdir(cgroup)
      sleeper = subprocess.Popen(["sleep", "60"])
      with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
        f.write(str(sleeper.pid))
      pid = sleeper.pid
    except OSError:
      pid = os.getpid()
  state = json.dumps({"ociVersion": "1.0.2", "id": "gpu-check",
                      "status": "creating", "pid": pid, "bundle": bundle})
  start = time.monotonic()
  try:
    code, out, err = check.run_tool(["gdp-cdi-hook"] + args[1:], 30,
                                    stdin=state)
  finally:
    if sleeper is not None:
      sleeper.kill()
      sleeper.wait()
    if os.path.isdir(cgroup):
      for _ in range(50):
        try:
          os.rmdir(cgroup)
          break
        except OSError:
          time.sleep(0.1)
  lines = [l for l in err.splitlines() if l.strip()]
  result = {"exit_code": code, "stderr": lines,
            "ms": round((time.monotonic() - start) * 1000, 1),
            "driver_has_calls": has_limits}
  problems = []
  if code != 1 or len(lines) != 1:
    problems.append("the hook did not fail closed with one line (exit %d)"
                    % code)
  elif pid != os.getpid() and "R615" not in lines[0]:
    problems.append("the refusal does not name the driver requirement")
  result["problems"] = problems
  result["ok"] = not problems
  return result


def free_port():
  s = socket.socket()
  s.bind(("127.0.0.1", 0))
  port = s.getsockname()[1]
  s.close()
  return port


class JsonLines:
  """The JSON lines a process prints, read on a thread."""

  def __init__(self, proc, log_path):
    self.proc = proc
    self.lines = []
    self.cond = threading.Condition()
    self.log = open(log_path, "w")
    threading.Thread(target=self._read, daemon=True).start()

  def _read(self):
    for line in self.proc.stdout:
      self.log.write(line)
      self.log.flush()
      try:
        obj = json.loads(line)
      except ValueError:
        continue
      with self.cond:
        self.lines.append(obj)
        self.cond.notify_all()

  def wait(self, pred, timeout):
    end = time.monotonic() + timeout
    with self.cond:
      while True:
        for obj in self.lines:
          if pred(obj):
            return obj
        left = end - time.monotonic()
        if left <= 0 or self.proc.poll() is not None and not self.lines:
          return None
        self.cond.wait(left)


def proc_usage(pid):
  """CPU seconds, context switches (all threads) and threads of `pid`."""
  with open("/proc/%d/stat" % pid) as f:
    fields = f.read().rsplit(")", 1)[1].split()
  ticks = os.sysconf("SC_CLK_TCK")
  cpu = (int(fields[11]) + int(fields[12])) / ticks
  switches = 0
  tasks = glob.glob("/proc/%d/task/*/status" % pid)
  for path in tasks:
    try:
      with open(path) as f:
        for line in f:
          if line.startswith(("voluntary_ctxt_switches",
                              "nonvoluntary_ctxt_switches")):
            switches += int(line.split()[1])
    except OSError:
      pass
  rss = 0
  with open("/proc/%d/status" % pid) as f:
    for line in f:
      if line.startswith("VmRSS:"):
        rss = int(line.split()[1])
  return {"cpu_s": cpu, "switches": switches, "threads": len(tasks),
          "rss_kib": rss}


def cdi_files(spec_dir):
  """Every host path the CDI specs in `spec_dir` name, with existence."""
  paths = {}
  for path in sorted(glob.glob(os.path.join(spec_dir, "*.json")) +
                     glob.glob(os.path.join(spec_dir, "*.yaml"))):
    with open(path) as f:
      text = f.read()
    try:
      spec = json.loads(text)
    except ValueError:
      import yaml  # pylint: disable=import-outside-toplevel
      spec = yaml.safe_load(text)
    edits = [spec.get("containerEdits", {})]
    edits += [d.get("containerEdits", {}) for d in spec.get("devices", [])]
    for e in edits:
      for n in e.get("deviceNodes", []) or []:
        host = n.get("hostPath", n.get("path"))
        paths[host] = os.path.exists(host)
      for m in e.get("mounts", []) or []:
        paths[m["hostPath"]] = os.path.exists(m["hostPath"])
  return paths


def step_device_plugin(check):
  kp = os.path.join(check.work, "kp")
  cdi = os.path.join(check.work, "cdi")
  os.makedirs(kp)
  os.makedirs(cdi)
  port = free_port()
  result = {}
  daemon = check.spawn("device-plugin", "gpu-device-plugin", check.daemon_flags() + [
      "--kubelet-socket", os.path.join(kp, "kubelet.sock"),
      "--state-dir", os.path.join(check.work, "state"),
      "--device-list-strategy", "envvar,cdi-annotations",
      "--cdi-spec-dir", cdi, "--pass-device-specs",
      "--metrics-address", "127.0.0.1:%d" % port])
  started = time.monotonic()
  kubelet = subprocess.Popen(
      check.argv("dpctl", ["kubelet", "--dir", kp, "--json"]),
      env=check.run_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
      stderr=open(os.path.join(check.out, "dpctl-kubelet.log"), "w"),
      text=True, start_new_session=True)
  check.procs.append(kubelet)
  events = JsonLines(kubelet, os.path.join(check.out, "dpctl-kubelet.jsonl"))
  devices = events.wait(lambda e: e.get("event") == "devices" and e.get(
      "devices"), check.left(30))
  if devices is None:
    raise RuntimeError("no device list from the plugin within 30 s (see "
                       "device-plugin.log)")
  result["registered_after_s"] = round(time.monotonic() - started, 3)
  result["resource"] = devices.get("resource")
  result["devices"] = devices.get("devices")
  ids = [d.get("id") for d in devices["devices"]]
  kubelet.stdin.write("allocate nvidia.com/gpu 1 gpu-check\n")
  kubelet.stdin.flush()
  alloc = events.wait(lambda e: e.get("event") == "allocate", check.left(20))
  result["allocate"] = alloc
  if alloc is None or alloc.get("error"):
    raise RuntimeError("Allocate failed: %r" % alloc)
  sock = os.path.join(kp, "nvidia-gpu.sock")
  code, out, err = check.run_tool(
      ["dpctl", "preferred", "--socket", sock, "--available", ",".join(ids),
       "--size", "1", "--json"], 20)
  result["preferred"] = json.loads(out) if code == 0 else err.strip()
  code, out, err = check.run_tool(
      ["dpctl", "allocate", "--socket", sock, ids[0], "--repeat", "1000",
       "--json"], 60)
  if code == 0:
    result["allocate_latency"] = json.loads(out.strip().splitlines()[-1])
  else:
    result["allocate_latency"] = err.strip()
  files = cdi_files(cdi)
  for spec in os.listdir(cdi):
    shutil.copy(os.path.join(cdi, spec), os.path.join(check.out, "cdi-" + spec))
  result["cdi_paths"] = len(files)
  result["cdi_missing"] = sorted(p for p, ok in files.items() if not ok)
  names = {os.path.basename(p) for p in files}
  wanted = ["libcuda.so", "libnvidia-ml.so", "nvidiactl"]
  result["cdi_has"] = {w: any(n.startswith(w) for n in names) for w in wanted}
  result["cdi_has"]["/dev/nvidia<minor>"] = any(
      re.fullmatch(r"nvidia\d+", n) for n in names)
  # Idle: registered, one stream open, nothing asked.
  time.sleep(1)
  before = proc_usage(daemon.pid)
  time.sleep(min(check.idle_seconds, max(1, check.deadline - time.monotonic()
                                         - 60)))
  after = proc_usage(daemon.pid)
  span = check.idle_seconds
  result["idle"] = {
      "seconds": span, "cpu_ms_per_min": round(
          (after["cpu_s"] - before["cpu_s"]) * 1000 * 60 / span, 2),
      "wakeups_per_s": round((after["switches"] - before["switches"]) / span,
                             3),
      "threads": after["threads"], "rss_kib": after["rss_kib"]}
  try:
    with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port,
                                timeout=5) as r:
      result["healthz"] = r.status
  except OSError as e:
    result["healthz"] = str(e)
  code, secs = check.stop(daemon)
  result["sigterm"] = {"exit_code": code, "seconds": secs}
  kubelet.stdin.write("quit\n")
  kubelet.stdin.flush()
  check.stop(kubelet)
  problems = []
  if result["cdi_missing"]:
    problems.append("CDI spec names missing files")
  if not all(result["cdi_has"].values()):
    problems.append("CDI spec lacks %s" % [k for k, v in
                                            result["cdi_has"].items() if not v])
  if code != 0:
    problems.append("exit code %d after SIGTERM" % code)
  result["problems"] = problems
  result["ok"] = not problems
  return result


class Api:
  """The emulator's REST API with its token and CA (no client library)."""

  def __init__(self, directory, port):
    with open(os.path.join(directory, "kubeconfig")) as f:
      text = f.read()
    self.token = re.search(r"token:\s*\"?([^\s\"]+)", text).group(1)
    self.base = "https://127.0.0.1:%d" % port
    self.ctx = ssl.create_default_context(
        cafile=os.path.join(directory, "ca.crt"))

  def call(self, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(self.base + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + self.token)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
      return json.loads(r.read())


def step_dra(check, reference):
  api_dir = os.path.join(check.work, "api")
  api_out = open(os.path.join(check.work, "api.out"), "w+")
  emulator = check.spawn("apiserver", "python3", [
      os.path.join(check.pack, "kube", "apiserver.py"), "--dir", api_dir,
      "--schema", os.path.join(check.pack, "kube", "schemas",
                               "resource.k8s.io-v1-release-1.36.json"),
      "--kube-version", "1.36"], stdout=api_out)
  listening = None
  end = time.monotonic() + check.left(40)
  while time.monotonic() < end and emulator.poll() is None:
    api_out.seek(0)
    for line in api_out:
      if '"listening"' in line:
        listening = json.loads(line)
    if listening:
      break
    time.sleep(0.1)
  if listening is None:
    raise RuntimeError("the API server emulator did not start (apiserver.log)")
  api = Api(api_dir, listening["port"])
  api.call("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                     "metadata": {"name": NODE}})
  reg = os.path.join(check.work, "registry")
  plugins = os.path.join(check.work, "plugins")
  cdi = os.path.join(check.work, "cdi-dra")
  daemon = check.spawn("dra", "gpu-device-plugin", check.daemon_flags() + [
      "--device-api=dra", "--node-name", NODE, "--kubeconfig",
      os.path.join(api_dir, "kubeconfig"), "--state-dir",
      os.path.join(check.work, "state-dra"), "--kubelet-registration-dir",
      reg, "--kubelet-plugins-dir", plugins, "--cdi-spec-dir", cdi,
      "--kubelet-socket", os.path.join(check.work, "kp-dra", "kubelet.sock")])
  result = {}
  slices = []
  end = time.monotonic() + check.left(30)
  path = ("/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName"
          "%3D" + NODE)
  while time.monotonic() < end:
    slices = api.call("GET", path)["items"]
    if sum(len(s["spec"].get("devices", [])) for s in slices) >= len(
        reference["gpus"]):
      break
    time.sleep(0.2)
  with open(os.path.join(check.out, "resourceslices.json"), "w") as f:
    json.dump(slices, f, indent=1)
  devices = [d for s in slices for d in s["spec"].get("devices", [])]
  result["slices"] = len(slices)
  result["devices"] = [d["name"] for d in devices]
  diffs = []
  by_uuid = {}
  for d in devices:
    uuid = d.get("attributes", {}).get("uuid", {}).get("string")
    if uuid:
      by_uuid[uuid] = d
  for r in reference["gpus"]:
    d = by_uuid.get(r["uuid"])
    if d is None:
      diffs.append("GPU %s: no device in the slice" % r["uuid"])
      continue
    a = d.get("attributes", {})
    def attr(name, kind):
      return a.get(name, {}).get(kind)
    checks = [
        ("productName", attr("productName", "string"), r["name"]),
        ("driverVersion", attr("driverVersion", "version"),
         semver(reference["driver_version"])),
        ("resource.kubernetes.io/pciBusID",
         attr("resource.kubernetes.io/pciBusID", "string"), r["pci_bus_id"]),
        ("resource.kubernetes.io/numaNode",
         attr("resource.kubernetes.io/numaNode", "int"),
         r["numa_node"] if r["numa_node"] not in (None, -1) else None)]
    cc = attr("cudaComputeCapability", "version")
    if r.get("compute_capability"):
      checks.append(("cudaComputeCapability", cc,
                     r["compute_capability"] + ".0"))
    for name, value, want in checks:
      if want is not None and value != want:
        diffs.append("%s %s: ours %r, reference %r" % (d["name"], name, value,
                                                       want))
    mem = d.get("capacity", {}).get("memory", {}).get("value")
    if r.get("memory_mib") and mem != "%dMi" % r["memory_mib"]:
      diffs.append("%s memory: ours %r, reference %dMi" %
                   (d["name"], mem, r["memory_mib"]))
  result["differences"] = diffs
  if not devices:
    raise RuntimeError("no devices published within 30 s (dra.log)")
  # A claim allocated the first device, prepared and unprepared.
  ns = "gpu-check"
  claim = api.call("POST", "/apis/resource.k8s.io/v1/namespaces/%s/"
                   "resourceclaims" % ns, {
                       "apiVersion": "resource.k8s.io/v1",
                       "kind": "ResourceClaim",
                       "metadata": {"name": "gpu", "namespace": ns},
                       "spec": {"devices": {"requests": [{
                           "name": "gpu", "exactly": {
                               "deviceClassName": DRIVER}}]}}})
  claim["status"] = {"allocation": {"devices": {"results": [{
      "request": "gpu", "driver": DRIVER, "pool": slices[0]["spec"]["pool"]
      ["name"], "device": devices[0]["name"]}]}}}
  api.call("PUT", "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/gpu/"
           "status" % ns, claim)
  ref = "%s/gpu/%s" % (ns, claim["metadata"]["uid"])
  start = time.monotonic()
  code, out, err = check.run_tool(
      ["dpctl", "dra-kubelet", "--registry-dir", reg, "--no-health", "--json",
       "--prepare", ref, "--exit-after-prepare"], 40)
  result["prepare"] = {"exit_code": code, "seconds": round(
      time.monotonic() - start, 3), "events": [json.loads(l) for l in
                                                out.splitlines() if l.strip()]}
  if code != 0:
    diffs.append("prepare failed: %s" % (err.strip() or out.strip()))
  result["cdi_after_prepare"] = sorted(os.listdir(cdi)) if os.path.isdir(
      cdi) else []
  socks = glob.glob(os.path.join(plugins, "*", "dra.sock")) + glob.glob(
      os.path.join(plugins, "*.sock"))
  dra_sock = next((s for s in socks if "dra" in os.path.basename(s)), None)
  if dra_sock:
    code, out, err = check.run_tool(
        ["dpctl", "dra", "unprepare", "--socket", dra_sock, "--json", ref], 40)
    result["unprepare"] = {"exit_code": code, "out": out.strip()}
    if code != 0:
      diffs.append("unprepare failed: %s" % (err.strip() or out.strip()))
    result["cdi_after_unprepare"] = sorted(os.listdir(cdi))
  else:
    diffs.append("no DRA socket under %s" % plugins)
  code, secs = check.stop(daemon)
  result["sigterm"] = {"exit_code": code, "seconds": secs}
  if code != 0:
    diffs.append("exit code %d after SIGTERM" % code)
  check.stop(emulator)
  result["ok"] = not diffs
  return result


def summary_text(report):
  lines = ["gpu-check %s: %s" % (
      "on the fake NVML (%s)" % report["fake"] if report["fake"] else
      "on a real GPU", "PASS" if report["ok"] else "FAIL"),
           "host: %s" % report.get("host"), ""]
  for name, step in report["steps"].items():
    lines.append("%-14s %s (%.1f s)" % (name, "ok" if step.get("ok") else
                                        "FAILED", step.get("seconds", 0)))
    if step.get("error"):
      lines.append("  error: %s" % step["error"])
    r = step.get("result") or {}
    for d in r.get("differences", []) + r.get("problems", []):
      lines.append("  - %s" % d)
    if name == "nvml_report":
      lines.append("  entry points: %s" % r.get("entry_points"))
      for i, g in enumerate(r.get("gpus", [])):
        lines.append("  %s: not answered %s; NVLinks up %s; recovery action "
                     "%s; memory limits %s" % (
                         g["uuid"], g["not_answered"], g["nvlinks"],
                         g["recovery_action"], g.get("memory_limits")))
        for p in g["mig_profiles"] if i == 0 else []:
          lines.append("    MIG profile %s" % p)
    if name == "device_plugin":
      lines.append("  Allocate: %s" % r.get("allocate_latency"))
      lines.append("  idle: %s" % r.get("idle"))
      lines.append("  SIGTERM: %s" % r.get("sigterm"))
      lines.append("  CDI: %s paths, has %s" % (r.get("cdi_paths"),
                                                r.get("cdi_has")))
    if name == "hook_refusal":
      lines.append("  %s" % (r.get("skipped") or r.get("stderr")))
    if name == "dra":
      lines.append("  devices: %s; prepare %s; SIGTERM %s" % (
          r.get("devices"), (r.get("prepare") or {}).get("exit_code"),
          r.get("sigterm")))
  return "\n".join(lines) + "\n"


def main(argv):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--pack", required=True)
  parser.add_argument("out")
  parser.add_argument("--fake", help="machine file name under fake/machines")
  parser.add_argument("--idle-seconds", type=float, default=60.0)
  args = parser.parse_args(argv)
  check = Check(args)
  report = check.report
  report["host"] = " ".join(os.uname())
  reference = None
  try:
    steps = [("nvml_report", lambda: step_nvml_report(check)),
             ("discovery", lambda: step_discovery(check)),
             ("device_plugin", lambda: step_device_plugin(check)),
             ("dra", lambda: step_dra(check, reference)),
             ("hook_refusal", lambda: step_hook(check, reference))]
    if not check.fake:
      steps.insert(0, ("host", lambda: step_host(check)))
    for name, fn in steps:
      start = time.monotonic()
      entry = {}
      try:
        entry["result"] = fn()
        entry["ok"] = entry["result"].get("ok", True)
        if name == "discovery":
          reference = entry["result"]["reference"]
      except Exception as e:  # pylint: disable=broad-except
        entry["ok"] = False
        entry["error"] = "%s: %s" % (type(e).__name__, e)
      entry["seconds"] = round(time.monotonic() - start, 2)
      report["steps"][name] = entry
      if name == "discovery" and reference is None:
        reference = {"gpus": [], "driver_version": None}
      print("gpu-check: %s %s (%.1f s)" % (name, "ok" if entry["ok"] else
                                          "FAILED: %s" % entry.get("error",
                                                                  "see report"),
                                          entry["seconds"]), flush=True)
  finally:
    check.cleanup()
  report["ok"] = all(s["ok"] for s in report["steps"].values())
  report["seconds"] = round(time.monotonic() - check.start, 1)
  with open(os.path.join(check.out, "report.json"), "w") as f:
    json.dump(report, f, indent=1)
  text = summary_text(report)
  with open(os.path.join(check.out, "summary.txt"), "w") as f:
    f.write(text)
  sys.stdout.write(text)
  return 0 if report["ok"] else 1


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
