#!/usr/bin/python3
"""What gdp-cdi-hook adds to a container's start (issue 25's figure: at most
20 ms, podman, median of 20, with and without the hook in one run).

  /usr/bin/python3 bench/hook_start.py --build build [--runs 20]

Needs what the runtime tests need (root, podman, runc; tests/runtime). Two
CDI devices in one spec, started alternately with `podman run --rm <base
image> true` (runc, the runtime tests' flags, in the same CDI mount
namespace wrapper): one with our hook limiting a GPU of the fake R615
machine (hgx-h100-r615) to 1 GiB (the hook reads the OCI state and
config.json, finds the container's cgroup, loads the fake NVML from the
driver root and sets the limit), one with an env edit only. Prints the
median and p90 wall time of each and the median difference (one warm-up
start of each first), then the hook alone, run as runc runs it (OCI state
on stdin, a bundle's config.json) on a process in a cgroup of its own: the median
of its fork-to-exit time, free of the container start's noise.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SOURCE, "tests", "runtime"))

KIND = "bench.gdp.example/share"
MACHINE = "hgx-h100-r615"


def hook_alone(hook, entry, bundle, pid, runs):
  """The hook's fork-to-exit times in ms, sorted, as runc runs it for a
  container whose first process is `pid` (one warm-up run first)."""
  state = json.dumps({"ociVersion": "1.0.2", "id": "bench",
                      "status": "creating", "pid": pid, "bundle": bundle})
  times = []
  for _ in range(runs + 1):
    t0 = time.monotonic()
    p = subprocess.run(entry["args"], executable=hook, input=state,
                       env=dict(e.split("=", 1) for e in entry["env"]),
                       capture_output=True, text=True, check=False)
    times.append((time.monotonic() - t0) * 1000)
    if p.returncode != 0:
      raise RuntimeError("the hook failed: %s" % p.stderr.strip())
  return sorted(times[1:])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--build", required=True, help="the CMake build")
  parser.add_argument("--runs", type=int, default=20)
  opts = parser.parse_args()
  os.environ["GDP_BUILD_DIR"] = os.path.abspath(opts.build)
  os.environ["GDP_SOURCE_DIR"] = SOURCE
  # pylint: disable=import-outside-toplevel
  import fixture
  import podman
  import yaml

  hook = os.path.join(fixture.BUILD, "src", "gdp-cdi-hook")
  for f in (hook, fixture.FAKE_NVML_TOOL, fixture.FAKE_NVML_LIB):
    if not os.path.exists(f):
      print("hook_start: %s is missing: build it first" % f)
      return 1
  try:
    podman.require_tools()
    podman.ensure_base_image(os.path.join(opts.build, "runtime-cache"),
                             lambda line: print("hook_start: " + line))
    podman.check_can_run()
  except podman.Failure as e:
    print("hook_start: %s" % e)
    return 1

  work = tempfile.mkdtemp(prefix="gdp-hook-bench-")
  try:
    root = os.path.join(work, "root")
    subprocess.run([fixture.FAKE_NVML_TOOL, "rootfs", "--device-nodes",
                    "char", "--machine", fixture.machine_file(MACHINE),
                    "--out", root], check=True, capture_output=True)
    lib = os.path.join(root, "usr/lib/x86_64-linux-gnu")
    os.makedirs(lib, exist_ok=True)
    shutil.copy(fixture.FAKE_NVML_LIB, os.path.join(lib, "libnvidia-ml.so.1"))
    with open(fixture.machine_file(MACHINE), encoding="utf-8") as f:
      gpu = yaml.safe_load(f)["gpus"][0]["uuid"]
    spec = {"cdiVersion": "0.5.0", "kind": KIND, "devices": [
        {"name": "hook", "containerEdits": {"hooks": [{
            "hookName": "createRuntime", "path": hook,
            "args": ["gdp-cdi-hook", "apply-memory-limits", "--driver-root",
                     root, "--share", "bench-share,%s,1024" % gpu],
            "env": ["FAKE_NVML_MACHINE=" + fixture.machine_file(MACHINE),
                    "FAKE_NVML_MEMORY_LIMITS=" +
                    os.path.join(work, "memory-limits")],
            "timeout": 30}]}},
        {"name": "plain", "containerEdits": {"env": ["BENCH=1"]}}]}
    cdi = os.path.join(work, "cdi")
    os.makedirs(cdi)
    with open(os.path.join(cdi, "bench.json"), "w", encoding="utf-8") as f:
      json.dump(spec, f)

    def start(device, i):
      name = podman.container_name("bench-%s-%d" % (device, i))
      args = (["run", "--rm"] + podman.run_args(name) +
              ["--device", "%s=%s" % (KIND, device), podman.BASE_IMAGE,
               "true"])
      cmd = podman.cdi_command(cdi, args)
      t0 = time.monotonic()
      p = subprocess.run(cmd, capture_output=True, text=True, check=False,
                         timeout=300)
      elapsed = time.monotonic() - t0
      if p.returncode != 0:
        raise RuntimeError("%s failed: %s" % (device, p.stderr.strip()))
      return elapsed * 1000

    times = {"hook": [], "plain": []}
    start("hook", -1)
    start("plain", -1)
    for i in range(opts.runs):
      for device in ("hook", "plain") if i % 2 == 0 else ("plain", "hook"):
        times[device].append(start(device, i))
    for device, ts in times.items():
      ts.sort()
      print("%-5s: median %.1f ms, p90 %.1f ms, min %.1f ms (%d starts)" % (
          device, statistics.median(ts), ts[int(0.9 * (len(ts) - 1))],
          ts[0], len(ts)))
    # The hook alone, as runc runs it (state on stdin, the bundle's
    # config.json): the part of the start it adds, without the container
    # start's noise.
    bundle = os.path.join(work, "bundle")
    os.makedirs(bundle)
    entry = spec["devices"][0]["containerEdits"]["hooks"][0]
    with open(os.path.join(bundle, "config.json"), "w",
              encoding="utf-8") as f:
      json.dump({"process": {"env": []},
                 "hooks": {"createRuntime": [entry]}}, f)
    # A process in a cgroup of its own, as a container's first process.
    cg = os.path.join(fixture.cgroup2_mount(),
                      "gdp-hook-bench-%d" % os.getpid())
    os.mkdir(cg)
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
      with open(os.path.join(cg, "cgroup.procs"), "w",
                encoding="utf-8") as f:
        f.write(str(sleeper.pid))
      alone = hook_alone(hook, entry, bundle, sleeper.pid, opts.runs)
    finally:
      sleeper.kill()
      sleeper.wait()
      os.rmdir(cg)
    print("the hook alone (fork+exec to exit, limit set): median %.1f ms, "
          "max %.1f ms (%d runs)" % (statistics.median(alone), alone[-1],
                                     len(alone)))
    diff = statistics.median(times["hook"]) - statistics.median(
        times["plain"])
    print("hook adds %.1f ms to the median start (%.3fx); target <= 20 ms: "
          "%s" % (diff, statistics.median(times["hook"]) /
                  statistics.median(times["plain"]),
                  "met" if diff <= 20 else "NOT met"))
    return 0
  finally:
    podman.cleanup()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
  sys.exit(main())
