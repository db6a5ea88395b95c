"""podman and runc from Debian, as the runtime tests use them.

Every container runs with RUN_FLAGS: runc (crun refuses hybrid cgroup
layouts), the cgroupfs manager, and explicit nofile/nproc limits (podman's
defaults exceed the hard limits of some hosts); they are harmless elsewhere.
Containers and images this process makes carry the label
gdp-runtime-test=<run id> and are removed by cleanup(), also when a test
fails. The base image (BASE_IMAGE) is kept: it is pulled, or made once with
debootstrap where no registry is reachable (ensure_base_image).

CDI: podman 4.3 reads CDI specs only from /etc/cdi and /var/run/cdi (later
versions have containers.conf's cdi_spec_dirs). cdi_command() runs podman
in a private mount namespace (unshare) where the plugin's --cdi-spec-dir is
mounted on /var/run/cdi and an empty directory on /etc/cdi (when it exists),
so podman's own CDI code reads exactly the spec the plugin wrote and the
host's directories are neither read nor changed (only /var/run/cdi is made,
empty, when missing: a mount needs a place).
"""

import os
import shutil
import subprocess
import tempfile
import time
import uuid

PODMAN = "podman"
# The CDI-less base of the Dockerfile's builder and of the workload
# containers: Debian 12 with a shell and coreutils.
BASE_IMAGE = "docker.io/library/debian:bookworm"
RUN_FLAGS = ["--runtime", "runc", "--cgroup-manager=cgroupfs",
             "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
LABEL = "gdp-runtime-test"
RUN_ID = "%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")


class Failure(Exception):
  """A prerequisite is missing: the one line saying why."""


def podman(*args, timeout=120, check=True, stdin=None):
  """Runs `podman ARGS`; CompletedProcess with text output. check: raise
  AssertionError naming the command and its stderr on a non-zero exit."""
  cmd = [PODMAN] + list(args)
  p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                     stdin=stdin, check=False)
  if check and p.returncode != 0:
    raise AssertionError("%s exited %d: %s%s" % (
        " ".join(cmd), p.returncode, p.stderr.strip(), p.stdout.strip()))
  return p


def run_args(name):
  """The flags every container gets: RUN_FLAGS, our label and `name`."""
  return RUN_FLAGS + ["--label", "%s=%s" % (LABEL, RUN_ID), "--name", name]


def container_name(what):
  """A container name unique to this run."""
  return "gdp-rt-%s-%s" % (RUN_ID, what)


def image_name(what):
  """An image name (localhost/...) unique to this run."""
  return "localhost/gdp-rt-%s:%s" % (what, RUN_ID)


def cdi_command(spec_dir, args):
  """The command line that runs `podman ARGS` with spec_dir as its only CDI
  directory (see the module docstring)."""
  os.makedirs("/var/run/cdi", exist_ok=True)
  empty = os.path.join(os.path.dirname(os.path.abspath(spec_dir)),
                       "cdi-empty")
  os.makedirs(empty, exist_ok=True)
  script = 'mount --bind "$1" /var/run/cdi || exit 125\n'
  if os.path.isdir("/etc/cdi"):
    script += 'mount --bind "$2" /etc/cdi || exit 125\n'
  script += 'shift 2\nexec "$@"\n'
  return (["unshare", "--mount", "--propagation", "private", "sh", "-c",
           script, "sh", spec_dir, empty, PODMAN] + list(args))


def cleanup():
  """Removes every container, then every image, of this run; returns what
  could not be removed (empty when all went)."""
  left = []
  p = podman("ps", "-a", "-q", "--filter", "label=%s=%s" % (LABEL, RUN_ID),
             check=False)
  for cid in p.stdout.split():
    if podman("rm", "-f", "-t", "0", cid, check=False).returncode != 0:
      left.append("container " + cid)
  p = podman("images", "-q", "--filter", "label=%s=%s" % (LABEL, RUN_ID),
             check=False)
  for iid in sorted(set(p.stdout.split())):
    if podman("rmi", "-f", iid, check=False).returncode != 0:
      left.append("image " + iid)
  return left


def require_tools():
  """Raises Failure naming the first missing tool."""
  for tool, package in (("podman", "podman"), ("runc", "runc"),
                        ("debootstrap", "debootstrap"),
                        ("unshare", "util-linux")):
    if shutil.which(tool) is None and not os.path.exists("/usr/sbin/" + tool):
      raise Failure("%s is not installed (Debian package %s; scripts/deps.sh "
                    "installs it)" % (tool, package))
  if os.geteuid() != 0:
    raise Failure("the runtime tests run rootful podman and make device "
                  "nodes: run them as root")


def ensure_base_image(cache_dir, log):
  """Makes BASE_IMAGE exist in podman's storage: kept from an earlier run,
  pulled from its registry, or, when it cannot be pulled, imported from
  cache_dir/debian-bookworm.tar, made first with `debootstrap
  --variant=minbase bookworm` when that is missing. Raises Failure when it
  cannot."""
  if podman("image", "exists", BASE_IMAGE, check=False).returncode == 0:
    return
  try:
    pulled = podman("pull", "--quiet", BASE_IMAGE, timeout=300, check=False)
  except subprocess.TimeoutExpired:
    pulled = None
  if pulled is not None and pulled.returncode == 0:
    log("pulled %s" % BASE_IMAGE)
    return
  log("%s cannot be pulled (%s): using debootstrap" % (
      BASE_IMAGE, "timed out" if pulled is None else
      (pulled.stderr.strip().splitlines() or ["no output"])[-1]))
  tar = os.path.join(cache_dir, "debian-bookworm.tar")
  if not os.path.exists(tar):
    os.makedirs(cache_dir, exist_ok=True)
    root = tempfile.mkdtemp(prefix="debootstrap-", dir=cache_dir)
    try:
      log("making %s with debootstrap (once; cached in %s)" % (BASE_IMAGE,
                                                                tar))
      start = time.monotonic()
      p = subprocess.run(["debootstrap", "--variant=minbase", "bookworm",
                          root], capture_output=True, text=True, check=False,
                         timeout=900)
      if p.returncode != 0:
        last = (p.stderr.strip() or p.stdout.strip()).splitlines()[-1:]
        raise Failure("debootstrap of Debian bookworm failed (a Debian mirror "
                      "must be reachable): %s" % " ".join(last))
      # No apt lists or package caches in the image.
      for d in ("var/lib/apt/lists", "var/cache/apt/archives"):
        subprocess.run(["find", os.path.join(root, d), "-type", "f",
                        "-delete"], check=False)
      subprocess.run(["tar", "-C", root, "-cf", tar + ".tmp", "."],
                     check=True, timeout=600)
      os.rename(tar + ".tmp", tar)
      log("debootstrap took %.0f s" % (time.monotonic() - start))
    finally:
      shutil.rmtree(root, ignore_errors=True)
  with open(tar, "rb") as f:
    p = podman("import", "-", BASE_IMAGE, stdin=f, timeout=600, check=False)
  if p.returncode != 0:
    raise Failure("podman import of %s failed: %s" % (tar, p.stderr.strip()))


def check_can_run():
  """Raises Failure with podman's own words when it cannot start a
  container here."""
  name = container_name("preflight")
  p = podman("run", "--rm", *run_args(name), BASE_IMAGE, "true", timeout=300,
             check=False)
  if p.returncode != 0:
    said = " ".join(p.stderr.strip().splitlines()[-2:]) or "no output"
    raise Failure("podman cannot start a container on this machine "
                  "(podman run --rm %s %s true exited %d: %s)" % (
                      " ".join(RUN_FLAGS), BASE_IMAGE, p.returncode, said))


def main(argv):
  """podman.py ready CACHE_DIR: makes the base image if needed (cached in
  CACHE_DIR) and checks that podman can start a container; exit 0, or 1
  with one line saying why not. For the demo."""
  if len(argv) != 2 or argv[0] != "ready":
    print(main.__doc__)
    return 2
  try:
    require_tools()
    ensure_base_image(argv[1], print)
    check_can_run()
  except Failure as e:
    print(e)
    return 1
  finally:
    cleanup()
  return 0


if __name__ == "__main__":
  import sys  # pylint: disable=import-outside-toplevel
  sys.exit(main(sys.argv[1:]))
