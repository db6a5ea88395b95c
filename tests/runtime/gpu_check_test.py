"""scripts/gpu-check.sh in a bare container: the pack made here must run on
a machine that has none of our build dependencies, as the GPU machines we
borrow (a CUDA image: no gRPC, protobuf, Abseil, yaml-cpp, no Debian
Python modules). The pack is made from the build's binaries, mounted
read-only into the Debian base image, which has no Python, no gRPC and no
libraries of ours, with no network; its run half runs there against the
fake NVML (--fake) and must pass every step. A library, module or tool
missing from the pack fails here, not on the GPU machine.
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import fixture
import podman

SCRIPT = os.path.join(fixture.SOURCE, "scripts", "gpu-check.sh")
MACHINE = "hgx-h100"
PACK_LIMIT = 64 * 1024 * 1024


def tree_bytes(path):
  total = 0
  for root, _, files in os.walk(path):
    for f in files:
      p = os.path.join(root, f)
      if not os.path.islink(p):
        total += os.path.getsize(p)
  return total


class GpuCheckTest(unittest.TestCase):
  """The pack, and its run half in a bare container."""

  @classmethod
  def setUpClass(cls):
    cls.dir = tempfile.mkdtemp(prefix="gdp-gpu-check-")
    cls.pack = os.path.join(cls.dir, "gpu-check")
    env = dict(os.environ, BUILD_DIR=fixture.BUILD)
    p = subprocess.run([SCRIPT, "pack", "--no-build", cls.pack], env=env,
                       capture_output=True, text=True, timeout=600,
                       check=False)
    cls.pack_result = p

  @classmethod
  def tearDownClass(cls):
    shutil.rmtree(cls.dir, ignore_errors=True)

  def test_pack_is_complete_and_small(self):
    p = self.pack_result
    self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
    self.assertLess(tree_bytes(self.pack), PACK_LIMIT)
    for f in ("gpu-check.sh", "check.py", "bin/gpu-device-plugin",
              "bin/dpctl", "bin/python3.11", "lib/ld-linux-x86-64.so.2",
              "kube/apiserver.py", "fake/libnvidia-ml.so.1"):
      self.assertTrue(os.path.exists(os.path.join(self.pack, f)), f)
    self.assertIn("gpu-check.sh run", p.stdout)

  def test_runs_in_a_bare_container(self):
    self.assertEqual(self.pack_result.returncode, 0,
                     self.pack_result.stderr)
    out = os.path.join(self.dir, "out")
    os.makedirs(out)
    # The base image has bash and coreutils, and nothing of ours.
    bare = podman.podman("run", "--rm", *podman.run_args(
        podman.container_name("bare")), "--network", "none",
                         podman.BASE_IMAGE, "sh", "-c",
                         "command -v python3 || ls /usr/lib/x86_64-linux-gnu"
                         " | grep -c -e libgrpc -e libprotobuf -e libyaml-cpp"
                         " -e libabsl", check=False)
    self.assertEqual(bare.stdout.strip(), "0",
                     "the base image is not bare: %s" % bare.stdout)
    p = podman.podman(
        "run", "--rm", *podman.run_args(podman.container_name("gpu-check")),
        "--network", "none", "-v", "%s:/gpu-check:ro" % self.pack, "-v",
        "%s:/out" % out, podman.BASE_IMAGE, "/gpu-check/gpu-check.sh", "run",
        "/out/r", "--fake", MACHINE, "--idle-seconds", "2", timeout=300,
        check=False)
    summary = ""
    if os.path.exists(os.path.join(out, "r", "summary.txt")):
      with open(os.path.join(out, "r", "summary.txt")) as f:
        summary = f.read()
    self.assertEqual(p.returncode, 0, "%s\n%s\n%s" % (p.stdout, p.stderr,
                                                      summary))
    with open(os.path.join(out, "r", "report.json")) as f:
      report = json.load(f)
    self.assertTrue(report["ok"], summary)
    steps = report["steps"]
    self.assertEqual(sorted(steps),
                     ["device_plugin", "discovery", "dra", "hook_refusal",
                      "nvml_report"])
    self.assertEqual(steps["discovery"]["result"]["differences"], [])
    dp = steps["device_plugin"]["result"]
    self.assertEqual(dp["sigterm"]["exit_code"], 0)
    self.assertEqual(dp["allocate_latency"]["calls"], 1000)
    self.assertTrue(all(dp["cdi_has"].values()), dp["cdi_has"])
    dra = steps["dra"]["result"]
    self.assertEqual(len(dra["devices"]), 8)
    self.assertEqual(dra["prepare"]["exit_code"], 0)
    self.assertEqual(dra["unprepare"]["exit_code"], 0)
    hook = steps["hook_refusal"]["result"]
    self.assertEqual(hook["exit_code"], 1, hook)
    self.assertEqual(len(hook["stderr"]), 1, hook)
    self.assertLess(report["seconds"], 300)


if __name__ == "__main__":
  unittest.main()
