#!/usr/bin/python3
"""The runtime suite: real container engine, OCI runtime and CDI reader.

  /usr/bin/python3 tests/runtime/run.py --build build [-k PATTERN]
      [--dockerfile]

Needs root, podman, runc, debootstrap (scripts/deps.sh installs them) and,
the first time, a reachable Debian mirror (the base image is pulled, or,
where no registry answers, made with debootstrap and cached in
BUILD/runtime-cache). Checks first that podman
can start a container: if it cannot, prints one line saying why and exits
1. Then runs image_test.py (the image built, by the Dockerfile's last stage
from the build under test, or with --dockerfile by the whole Dockerfile,
and run as the DaemonSet runs it) and workload_test.py (containers from the plugin's answers), and
removes every container and image it made (the base image stays), also
when a test fails or the run is interrupted. Exit 0 when all passed.
"""

import argparse
import os
import signal
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--build", required=True,
                      help="the CMake build directory (GCC build)")
  parser.add_argument("-k", dest="patterns", action="append", default=[],
                      help="only tests whose name contains this")
  parser.add_argument("--dockerfile", action="store_true",
                      help="build the image with the whole Dockerfile "
                      "(compiling in its first stage) rather than from "
                      "the build under test")
  opts = parser.parse_args()
  if opts.dockerfile:
    os.environ["GDP_RUNTIME_DOCKERFILE"] = "1"
  os.environ["GDP_BUILD_DIR"] = os.path.abspath(opts.build)
  os.environ["GDP_SOURCE_DIR"] = os.path.abspath(os.path.join(HERE, "..",
                                                              ".."))
  # pylint: disable=import-outside-toplevel
  import fixture
  import podman

  # A signal (ctest's timeout, Ctrl-C) still runs the cleanup below.
  def interrupted(signum, _):
    raise KeyboardInterrupt("signal %d" % signum)
  signal.signal(signal.SIGTERM, interrupted)

  start = time.monotonic()
  try:
    for binary in (fixture.PLUGIN, fixture.DPCTL, fixture.FAKE_NVML_TOOL,
                   fixture.FAKE_NVML_LIB):
      if not os.path.exists(binary):
        raise podman.Failure("%s is missing: build %s first" % (
            binary, opts.build))
    podman.require_tools()
    podman.ensure_base_image(os.path.join(opts.build, "runtime-cache"),
                             lambda line: print("runtime tests: " + line,
                                                flush=True))
    podman.check_can_run()
  except podman.Failure as e:
    print("runtime tests: FAILED: %s" % e, flush=True)
    return 1

  loader = unittest.TestLoader()
  if opts.patterns:
    loader.testNamePatterns = ["*%s*" % p for p in opts.patterns]
  suite = unittest.TestSuite()
  for module in ("image_test", "workload_test", "memory_limit_test",
                 "dra_shares_test", "nvidia_hooks_test", "dynamic_mig_test",
                 "gpu_check_test"):
    suite.addTests(loader.loadTestsFromName(module))
  ok = False
  try:
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(
        suite)
    ok = result.wasSuccessful()
  finally:
    fixture.stop_all()
    left = podman.cleanup()
    if left:
      print("runtime tests: could not remove %s" % ", ".join(left))
      ok = False
  import image_test
  if "seconds" in image_test.BUILD:
    print("runtime tests: image built (%s) in %.0f s, %.1f MB" % (
        image_test.BUILD["how"], image_test.BUILD["seconds"],
        image_test.BUILD["bytes"] / 1e6))
  print("runtime tests: %s in %.0f s" % ("passed" if ok else "FAILED",
                                         time.monotonic() - start))
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main())
