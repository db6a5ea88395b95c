"""The container image: built by podman with the Dockerfile's last stage
over a root made from the build under test (or, with run.py --dockerfile,
with the whole Dockerfile; see build_image), then run as deploy/base's DaemonSet runs it (its args, env, host mounts,
securityContext and memory limit, read from the manifest) plus a read-only
root, with the fake NVML mounted where the NVIDIA container toolkit mounts
the driver's. It must register with `dpctl kubelet` on the host, answer
/healthz on the container's IP, write the node labels into a host
directory, answer Allocate, and exit 0 within 1 s of SIGTERM, removing
its socket.
"""

import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import yaml

import fixture
import podman

DAEMONSET = os.path.join(fixture.SOURCE, "deploy", "base", "daemonset.yaml")
MACHINE = "dgx-a100"
FAKE_MACHINE_IN_CONTAINER = "/etc/fake-nvml/machine.yaml"
# Set by the first test to build the image, for run.py's summary.
BUILD = {}


# The Dockerfile's stage 1 ends with these two scripts making /rootfs, which
# stage 2 copies into an empty image.
STAGE1_SCRIPTS = (
    "deploy/image/rootfs.sh /rootfs /build/src/gpu-device-plugin "
    "/build/dpctl/dpctl",
    "deploy/image/hook_bundle.sh /rootfs /usr/local/gpu-device-plugin",
)
STAGE2_COPY = "COPY --from=build /rootfs/ /"


def final_stage(dockerfile):
  """The Dockerfile's last stage (from its last FROM), taking its root
  from a build context's rootfs/ instead of stage 1's /rootfs. Fails if
  the Dockerfile no longer has the shape this relies on."""
  with open(dockerfile, encoding="utf-8") as f:
    text = f.read()
  for script in STAGE1_SCRIPTS:
    if script not in text:
      raise AssertionError("%s no longer runs %r: update image_test.py" %
                           (dockerfile, script))
  lines = text.splitlines()
  start = max(i for i, l in enumerate(lines) if l.startswith("FROM "))
  stage = lines[start:]
  if stage[0].split() != ["FROM", "scratch"] or stage.count(STAGE2_COPY) != 1:
    raise AssertionError("%s's last stage is not FROM scratch with one %r: "
                         "update image_test.py" % (dockerfile, STAGE2_COPY))
  return "\n".join(l if l != STAGE2_COPY else "COPY rootfs/ /"
                   for l in stage) + "\n"


def build_image():
  """Builds the image once per run; the image name. Records the time and
  size in BUILD.

  By default its root is made here from the build under test, by the same
  scripts and stripping as the Dockerfile's stage 1, and put in an image
  by the Dockerfile's own last stage: the image holds exactly the binaries
  the other tests ran, and CI does not compile the daemon a third time (in
  stage 1, about five minutes on 2 cores). GDP_RUNTIME_DOCKERFILE=1
  (run.py --dockerfile) builds the whole Dockerfile instead, as an
  operator does."""
  if "image" in BUILD:
    return BUILD["image"]
  image = podman.image_name("gpu-device-plugin")
  start = time.monotonic()
  label = ["--label", "%s=%s" % (podman.LABEL, podman.RUN_ID)]
  dockerfile = os.path.join(fixture.SOURCE, "Dockerfile")
  # --layers=false: no intermediate images are left behind.
  if os.environ.get("GDP_RUNTIME_DOCKERFILE") == "1":
    BUILD["how"] = "the whole Dockerfile"
    podman.podman("build", "--pull=never", "--layers=false",
                  *podman.RUN_FLAGS, *label, "-t", image, "-f", dockerfile,
                  fixture.SOURCE, timeout=3600)
  else:
    BUILD["how"] = "the Dockerfile's last stage, root from %s" % fixture.BUILD
    with tempfile.TemporaryDirectory(prefix="gdp-image-") as ctx:
      binaries = {
          "gpu-device-plugin": fixture.PLUGIN,
          "dpctl": fixture.DPCTL,
          "gdp-cdi-hook-host": os.path.join(fixture.BUILD, "src", "hook",
                                            "gdp-cdi-hook-host"),
      }
      for name, path in binaries.items():
        shutil.copy(path, os.path.join(ctx, name))
        subprocess.run(["strip", os.path.join(ctx, name)], check=True)
      rootfs = os.path.join(ctx, "rootfs")
      for argv in ([os.path.join(fixture.SOURCE, "deploy/image/rootfs.sh"),
                    rootfs, os.path.join(ctx, "gpu-device-plugin"),
                    os.path.join(ctx, "dpctl")],
                   [os.path.join(fixture.SOURCE,
                                 "deploy/image/hook_bundle.sh"),
                    rootfs, "/usr/local/gpu-device-plugin",
                    os.path.join(ctx, "gdp-cdi-hook-host")]):
        done = subprocess.run(argv, capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
          raise AssertionError("%s failed: %s" % (argv[0], done.stderr))
      with open(os.path.join(ctx, "Containerfile"), "w",
                encoding="utf-8") as f:
        f.write(final_stage(dockerfile))
      podman.podman("build", "--pull=never", "--layers=false",
                    *podman.RUN_FLAGS, *label, "-t", image, "-f",
                    os.path.join(ctx, "Containerfile"), ctx, timeout=600)
  BUILD["seconds"] = time.monotonic() - start
  size = podman.podman("image", "inspect", "--format", "{{.Size}}",
                       image).stdout.strip()
  BUILD["bytes"] = int(size)
  BUILD["image"] = image
  return image


def daemonset_container():
  """The DaemonSet's container and pod volumes."""
  with open(DAEMONSET, encoding="utf-8") as f:
    ds = yaml.safe_load(f)
  pod = ds["spec"]["template"]["spec"]
  return pod["containers"][0], {v["name"]: v for v in pod["volumes"]}


def memory_limit(quantity):
  """A Kubernetes memory quantity ("256Mi") as podman's --memory."""
  m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", quantity)
  if m is None:
    raise ValueError("unexpected memory quantity %r" % quantity)
  return m.group(1) + {"Ki": "k", "Mi": "m", "Gi": "g", None: ""}[m.group(2)]


class ImageTest(fixture.RuntimeTest):

  def host_dir(self, volume):
    """The host directory standing for a hostPath volume of the manifest:
    the driver root stays the host's /, read-only as in the manifest; any
    other gets a directory of the test."""
    if volume["hostPath"]["path"] == "/":
      return "/"
    d = self.path("host", volume["name"])
    os.makedirs(d, exist_ok=True)
    return d

  def daemonset_flags(self):
    """podman flags for the manifest's container; also sets self.kp_dir
    and self.nfd_dir (the host dirs of the device-plugins and
    nfd-features volumes)."""
    container, volumes = daemonset_container()
    sc = container["securityContext"]
    self.assertEqual(sc.get("capabilities", {}).get("drop"), ["ALL"])
    self.assertIs(sc.get("allowPrivilegeEscalation"), False)
    flags = ["--cap-drop=ALL", "--security-opt=no-new-privileges",
             "--read-only", "--read-only-tmpfs=false",
             "--memory", memory_limit(
                 container["resources"]["limits"]["memory"])]
    for e in container.get("env", []):
      flags += ["--env", "%s=%s" % (e["name"], e["value"])]
    for m in container["volumeMounts"]:
      v = volumes[m["name"]]
      host = self.host_dir(v)
      options = []
      if m.get("readOnly"):
        options.append("ro")
      if m.get("mountPropagation") == "HostToContainer":
        options.append("rslave")
      flags += ["--volume", "%s:%s%s" % (host, m["mountPath"],
                                         ":" + ",".join(options)
                                         if options else "")]
      if m["name"] == "device-plugins":
        self.kp_dir = host
      if m["name"] == "nfd-features":
        self.nfd_dir = host
    return flags, container.get("args", [])

  def test_daemonset_settings_register_label_and_stop(self):
    image = build_image()
    flags, args = self.daemonset_flags()
    # What the NVIDIA container toolkit would mount: the driver's NVML (the
    # fake here), read-only, into /usr/lib/x86_64-linux-gnu.
    flags += ["--volume", "%s:/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1:ro"
              % os.path.realpath(fixture.FAKE_NVML_LIB),
              "--volume", "%s:%s:ro" % (fixture.machine_file(MACHINE),
                                        FAKE_MACHINE_IN_CONTAINER),
              "--env", "FAKE_NVML_MACHINE=" + FAKE_MACHINE_IN_CONTAINER]
    kubelet = fixture.Kubelet(self.kp_dir, self.path("kubelet.err"))
    self.processes.append(kubelet)
    name = podman.container_name("plugin-image")
    self.containers.append(name)
    podman.podman("run", "-d", *podman.run_args(name), *flags, image,
                  *args, "--labels", timeout=4 * fixture.TIMEOUT)

    def log():
      return podman.podman("logs", name, check=False).stderr

    reg = kubelet.event("register", "nvidia.com/gpu")
    self.assertIsNotNone(reg, "no registration\n" + log())
    self.assertTrue(reg.get("ok"), "%s\n%s" % (reg, log()))
    devices = kubelet.event("devices", "nvidia.com/gpu")
    self.assertIsNotNone(devices, log())
    self.assertEqual(len(devices["devices"]), 8, devices)
    self.assertIn("NVML loaded from libnvidia-ml.so.1", log())

    # The settings really hold for the running process.
    pid = podman.podman("inspect", "-f", "{{.State.Pid}}",
                        name).stdout.strip()
    with open("/proc/%s/status" % pid, encoding="utf-8") as f:
      status = dict(line.split(":", 1) for line in f if ":" in line)
    self.assertEqual(status["CapEff"].strip(), "0" * 16)
    self.assertEqual(status["CapPrm"].strip(), "0" * 16)
    self.assertEqual(status["NoNewPrivs"].strip(), "1")
    with open("/proc/%s/mountinfo" % pid, encoding="utf-8") as f:
      root_options = [line.split()[5] for line in f
                      if line.split()[4] == "/"]
    self.assertTrue(root_options and root_options[-1].startswith("ro"),
                    root_options)

    # /healthz as the kubelet probes it: on the container's IP.
    ip = podman.podman("inspect", "-f", "{{.NetworkSettings.IPAddress}}",
                       name).stdout.strip()
    self.assertTrue(ip, "the container has no IP address")
    port = next(p["containerPort"] for p in daemonset_container()[0]["ports"]
                if p["name"] == "metrics")
    self.assertEqual(http_status("http://%s:%d/healthz" % (ip, port)), 200,
                     log())

    # --labels: the feature file lands in the host's NFD directory.
    gfd = os.path.join(self.nfd_dir, "gfd")
    deadline = time.monotonic() + fixture.TIMEOUT
    text = ""
    while time.monotonic() < deadline and "gpu.count=" not in text:
      time.sleep(0.2)
      if os.path.exists(gfd):
        with open(gfd, encoding="utf-8") as f:
          text = f.read()
    self.assertIn("nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB", text, log())
    self.assertIn("nvidia.com/gpu.count=8", text)

    a = kubelet.allocate("nvidia.com/gpu", 2, "pod-a")
    self.assertEqual((a or {}).get("event"), "allocate", "%s\n%s" % (a, log()))
    self.assertEqual(len(a["response"]["envs"]["NVIDIA_VISIBLE_DEVICES"]
                         .split(",")), 2, a)

    # SIGTERM with a 1 s grace period (then SIGKILL, exit 137).
    sock = os.path.join(self.kp_dir, "nvidia-gpu.sock")
    self.assertTrue(os.path.exists(sock))
    start = time.monotonic()
    podman.podman("stop", "-t", "1", name, timeout=4 * fixture.TIMEOUT)
    took = time.monotonic() - start
    code = podman.podman("inspect", "-f", "{{.State.ExitCode}}",
                         name).stdout.strip()
    self.assertEqual(code, "0", "exit code %s after SIGTERM (%.2f s)\n%s" %
                     (code, took, log()))
    self.assertFalse(os.path.exists(sock), "the socket is left behind")


def http_status(url, timeout=fixture.TIMEOUT):
  """GET url until it answers 200 or the deadline; the last status."""
  deadline = time.monotonic() + timeout
  last = None
  while time.monotonic() < deadline:
    try:
      with urllib.request.urlopen(url, timeout=10) as r:
        last = r.status
    except urllib.error.HTTPError as e:
      last = e.code
    except OSError as e:
      last = "no answer (%s)" % e
    if last == 200:
      break
    time.sleep(0.2)
  return last


if __name__ == "__main__":
  unittest.main()
