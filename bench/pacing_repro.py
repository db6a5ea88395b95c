#!/usr/bin/python3
"""Reproductions of issue 23's items 2 and 3 with real daemons.

  pacing_repro.py watch-ends {closed|expired} --plugin BIN ... [--seconds 10]
    One daemon (--device-api=dra) against the API server emulator, whose
    watches are ended as soon as they open: "closed" ends every open watch
    cleanly (/emulator/close-watches) every 20 ms; "expired" also writes an
    object and compacts the history first, so that every watch (from the
    daemon's last resourceVersion) gets a 410 Expired ERROR event. Prints
    the daemon's WATCH and LIST requests in the window.
  pacing_repro.py two-writers --plugin BIN ... [--seconds 70]
    Two daemons with the same --node-name and different machines (so
    different devices) publish one pool. Prints each one's publications
    (its "Published ..." log lines: reconciles that wrote) and the
    emulator's slice writes, in total and per minute after the first 10 s.

Common options: --plugin (gpu-device-plugin), --fake-lib (directory of the
fake libnvidia-ml.so.1), --rootfs-tool (fake-nvml), --machine (and
--machine2 for the second writer). The emulator is tests/kube/apiserver.py.
Loopback only; everything lives in a temporary directory.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "kube"))
sys.dont_write_bytecode = True
# pylint: disable=wrong-import-position
from emulator_fixture import Emulator  # noqa: E402

SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def fixture(args, work, machine, name):
  """The fixture root of `machine` under work/name; its directory."""
  root = os.path.join(work, name, "root")
  subprocess.run([args.rootfs_tool, "rootfs", "--machine", machine, "--out",
                  root], check=True, stdout=subprocess.DEVNULL)
  os.makedirs(os.path.join(root, "proc/sys/kernel/random"), exist_ok=True)
  with open(os.path.join(root, "proc/sys/kernel/random/boot_id"), "w",
            encoding="ascii") as f:
    f.write("boot-1\n")
  return os.path.join(work, name)


def spawn(args, emu, home, machine, node):
  """A daemon for `node` on the fixture in `home`; its Popen."""
  root = os.path.join(home, "root")
  for d in ("reg", "plugins", "cdi", "kp"):
    os.makedirs(os.path.join(home, d), exist_ok=True)
  argv = [args.plugin, "--kubelet-socket", os.path.join(home, "kp/k.sock"),
          "--sysfs-root", os.path.join(root, "sys"), "--dev-root", root,
          "--proc-root", os.path.join(root, "proc"), "--state-dir", "",
          "--device-api", "dra", "--node-name", node,
          "--kubeconfig", os.path.join(emu.dir, "kubeconfig"),
          "--kubelet-registration-dir", os.path.join(home, "reg"),
          "--kubelet-plugins-dir", os.path.join(home, "plugins"),
          "--cdi-spec-dir", os.path.join(home, "cdi")]
  env = dict(os.environ, LD_LIBRARY_PATH=args.fake_lib,
             FAKE_NVML_MACHINE=machine)
  err = open(os.path.join(home, "plugin.err"), "wb")  # pylint: disable=consider-using-with
  return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                          stderr=err)


def daemon_requests(emu, start, end):
  """The daemons' requests (User-Agent gpu-device-plugin) in [start, end)."""
  return [r for r in emu.control("GET", "requests")
          if r["user_agent"].startswith("gpu-device-plugin") and
          start <= r["time"] < end]


def wait_published(emu, node, timeout=30):
  """Waits until `node` has a slice; False after `timeout` seconds."""
  deadline = time.time() + timeout
  while time.time() < deadline:
    items = emu.client.list("resourceslices",
                            field_selector="spec.nodeName=" + node)["items"]
    if items:
      return True
    time.sleep(0.1)
  return False


def watch_ends(args, emu, work):
  """Item 2: watches that end at once."""
  home = fixture(args, work, args.machine, "a")
  emu.client.create("nodes", {"metadata": {"name": "node-a"}})
  proc = spawn(args, emu, home, args.machine, "node-a")
  try:
    if not wait_published(emu, "node-a"):
      sys.exit("the daemon did not publish")
    time.sleep(1)
    start = time.time()
    n = 0
    while time.time() < start + args.seconds:
      if args.how == "expired":
        emu.client.update("nodes", dict(
            emu.client.get("nodes", "node-a"),
            metadata=dict(emu.client.get("nodes", "node-a")["metadata"],
                          labels={"n": str(n)})))
        emu.control("POST", "compact")
      emu.control("POST", "close-watches", {"abrupt": False})
      n += 1
      time.sleep(0.02)
    end = time.time()
    reqs = daemon_requests(emu, start, end)
    watches = sum(1 for r in reqs if "watch=true" in r["path"])
    lists = sum(1 for r in reqs if r["method"] == "GET" and
                r["path"].startswith(SLICES) and "watch=true" not in r["path"])
    print(json.dumps({"how": args.how, "seconds": round(end - start, 1),
                      "watch_requests": watches, "list_requests": lists,
                      "other_requests": len(reqs) - watches - lists}))
  finally:
    proc.terminate()
    proc.wait(10)


def published_times(home):
  """The times (seconds of the day) of the daemon's "Published" lines."""
  out = []
  with open(os.path.join(home, "plugin.err"), encoding="utf-8",
            errors="replace") as f:
    for line in f:
      if "Published" not in line:
        continue
      m = re.search(r" (\d\d):(\d\d):(\d\d\.\d+) ", line)
      if m:
        out.append(int(m.group(1)) * 3600 + int(m.group(2)) * 60 +
                   float(m.group(3)))
  return out


def two_writers(args, emu, work):
  """Item 3: two daemons publishing one pool."""
  homes = [fixture(args, work, args.machine, "a"),
           fixture(args, work, args.machine2, "b")]
  emu.client.create("nodes", {"metadata": {"name": "node-a"}})
  start = time.time()
  procs = [spawn(args, emu, homes[0], args.machine, "node-a"),
           spawn(args, emu, homes[1], args.machine2, "node-a")]
  try:
    time.sleep(args.seconds)
  finally:
    for p in procs:
      p.terminate()
    for p in procs:
      p.wait(10)
  end = time.time()
  day = start - (start % 86400)
  settle = start + 10
  minutes = (end - settle) / 60
  result = {"seconds": round(end - start, 1)}
  for name, home in zip(("a", "b"), homes):
    times = [day + t for t in published_times(home)]
    late = [t for t in times if t >= settle]
    warnings = open(os.path.join(home, "plugin.err"), encoding="utf-8",
                    errors="replace").read().count("keep being rewritten")
    result[name] = {"publications": len(times),
                    "publications_per_minute_after_10s":
                        round(len(late) / minutes, 1),
                    "fight_warnings": warnings}
  writes = [r for r in daemon_requests(emu, start, end)
            if r["method"] != "GET" and r["path"].startswith(SLICES)]
  late = [r for r in writes if r["time"] >= settle]
  lists = [r for r in daemon_requests(emu, start, end)
           if r["method"] == "GET" and r["path"].startswith(SLICES) and
           "watch=true" not in r["path"]]
  result["slice_writes_both"] = len(writes)
  result["slice_writes_per_minute_after_10s_both"] = round(
      len(late) / minutes, 1)
  result["lists_both"] = len(lists)
  print(json.dumps(result))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("what", choices=["watch-ends", "two-writers"])
  parser.add_argument("how", nargs="?", choices=["closed", "expired"],
                      default="closed")
  parser.add_argument("--plugin", required=True)
  parser.add_argument("--fake-lib", required=True)
  parser.add_argument("--rootfs-tool", required=True)
  parser.add_argument("--machine", required=True)
  parser.add_argument("--machine2", default=os.path.join(
      ROOT, "fake_nvml/machines/pcie-t4.yaml"))
  parser.add_argument("--seconds", type=float, default=None)
  args = parser.parse_args()
  if args.seconds is None:
    args.seconds = 10 if args.what == "watch-ends" else 70
  work = tempfile.mkdtemp(prefix="gdp-pacing-")
  try:
    with Emulator(directory=os.path.join(work, "api")) as emu:
      if args.what == "watch-ends":
        watch_ends(args, emu, work)
      else:
        two_writers(args, emu, work)
  finally:
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
  main()
