"""NVIDIA's CDI hooks in our specs (--nvidia-cdi-hook-path), run by podman
and runc: the plugin writes its spec (device plugin, cdi-cri) or a claim's
spec (DRA), podman's own CDI code injects it, and a stand-in for
nvidia-cdi-hook (or nvidia-ctk, which takes `hook` first) records each
call: its arguments, its env, and whether it ran in the container's mount
namespace (the createContainer stage) or the runtime's. The stand-in does
create-symlinks' work as NVIDIA's does (a symlink beside the link, renamed
over it, inside the container's root), so the record also shows that our
mounts leave the links to the hook: the container finds libnvidia-ml.so.1,
which the spec then does not mount.
"""

import json
import os
import stat

import containers
import fixture
import podman
import workload_test

LIB_DIR = "/usr/lib/x86_64-linux-gnu"
VERSION = fixture.DRIVER_VERSION

# The stand-in hook: one JSON line per call in RECORD; create-symlinks
# done in the container's root (from the OCI state on stdin and the
# bundle's config.json); every other hook only recorded.
STAND_IN = r"""#!/usr/bin/python3
import json, os, sys, uuid
RECORD = %(record)r
state = json.load(sys.stdin)
with open(os.path.join(state["bundle"], "config.json")) as f:
  root = os.path.join(state["bundle"], json.load(f)["root"]["path"])
args = sys.argv[1:]
# The container's /dev (a tmpfs podman mounts) is a mount point only in the
# container's mount namespace, where createContainer hooks run.
with open(RECORD, "a") as f:
  f.write(json.dumps({"argv0": os.path.basename(sys.argv[0]), "args": args,
                      "env": sorted("%%s=%%s" %% kv for kv in
                                    os.environ.items()),
                      "status": state.get("status"),
                      "namespace": "container"
                                   if os.path.ismount(root + "/dev")
                                   else "runtime"}) + "\n")
name = [a for a in args if a != "hook"][0]
if name == "create-symlinks":
  links = [args[i + 1] for i, a in enumerate(args) if a == "--link"]
  for spec in links:
    target, link = spec.split("::")
    path = root + link
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = "%%s-%%s" %% (path, uuid.uuid4().hex)
    os.symlink(target, tmp)
    os.rename(tmp, path)
"""

# NVIDIA's hooks for the fixture's driver (libnvidia-ml.so.VERSION and its
# libnvidia-ml.so.1 link), in NVIDIA's order, after the binary's own args.
EXPECTED = [
    ["create-symlinks", "--link",
     "libnvidia-ml.so.%s::%s/libnvidia-ml.so.1" % (VERSION, LIB_DIR)],
    ["enable-cuda-compat", "--host-driver-version=%s" % VERSION],
    ["update-ldcache", "--folder", LIB_DIR],
    ["disable-device-node-modification"],
    ["update-application-profile"],
]


class NvidiaHooksTest(fixture.RuntimeTest):
  """Our specs with NVIDIA's hooks, run by podman + runc."""

  run_container = workload_test.WorkloadTest.run_container
  start = workload_test.WorkloadTest.start
  check = workload_test.WorkloadTest.check

  def stand_in(self, name):
    """The stand-in hook as <dir>/bin/<name>; its path."""
    os.makedirs(self.path("bin"), exist_ok=True)
    path = self.path("bin", name)
    with open(path, "w", encoding="utf-8") as f:
      f.write(STAND_IN % {"record": self.path("record.jsonl")})
    os.chmod(path, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP |
             stat.S_IROTH | stat.S_IXOTH)
    return path

  def record(self):
    try:
      with open(self.path("record.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]
    except FileNotFoundError:
      return []

  def check_record(self, command):
    """The stand-in ran NVIDIA's hooks once each, in order, as `command`
    (argv[0] and what precedes the hook's name), in the container's mount
    namespace, with NVIDIA_CTK_DEBUG=false; the spec read as written."""
    calls = self.record()
    spec_text = "".join(
        open(os.path.join(self.path("cdi"), n), encoding="utf-8").read()
        for n in sorted(os.listdir(self.path("cdi"))))
    self.assertEqual([c["args"] for c in calls],
                     [command[1:] + e for e in EXPECTED],
                     "hook calls\n%s\nspec: %s" % (calls, spec_text))
    for c in calls:
      self.assertEqual(c["argv0"], command[0], c)
      self.assertEqual(c["namespace"], "container", c)
      self.assertIn("NVIDIA_CTK_DEBUG=false", c["env"], c)

  def test_device_plugin_spec_runs_nvidia_cdi_hook(self):
    hook = self.stand_in("nvidia-cdi-hook")
    minors = workload_test.gpu_minors("dgx-a100")
    kubelet = self.start("dgx-a100", ["--device-list-strategy", "cdi-cri",
                                      "--nvidia-cdi-hook-path", hook])
    self.registered(kubelet, "nvidia.com/gpu")
    a = self.allocated(kubelet, "nvidia.com/gpu", 1, "pod-a")
    flags, names = containers.podman_flags(a["response"])
    self.assertEqual(len(names), 1, a)
    with open(self.path("cdi", "k8s.device-plugin.nvidia.com-gpu.json"),
              encoding="utf-8") as f:
      mounts = json.load(f)["containerEdits"]["mounts"]
    self.assertEqual([m["containerPath"] for m in mounts
                      if "libnvidia-ml" in m["containerPath"]],
                     ["%s/libnvidia-ml.so.%s" % (LIB_DIR, VERSION)],
                     "only the real file is mounted")
    given = [minors[i] for i in a["devices"]]
    probes = workload_test.other_gpus(minors.values(), given)
    report = self.run_container("nvidia-hooks-dp", flags, probes, cdi=True)
    # nvml: libnvidia-ml.so.1 is there, made by create-symlinks.
    self.check(report, "device plugin with NVIDIA's hooks",
               containers.expected_nodes(given), "void", True, probes)
    self.check_record(["nvidia-cdi-hook"])

  def test_dra_claim_spec_runs_nvidia_ctk_hook(self):
    hook = self.stand_in("nvidia-ctk")
    root = self.make_root("dgx-a100", driver=True)
    with workload_test.emulator_fixture.Emulator(
        directory=self.path("api")) as api:
      uid = workload_test.allocated_claim(api.client, "gpu-3")
      kubelet = fixture.Process(
          [fixture.DPCTL, "dra-kubelet", "--registry-dir", self.path("reg"),
           "--json", "--no-health"], self.path("dra-kubelet.err"),
          stdin=True)
      self.processes.append(kubelet)
      self.assertIsNotNone(
          kubelet.next_json(lambda e: e.get("event") == "listening"),
          kubelet.stderr())
      self.start_plugin("dgx-a100", [
          "--device-api", "dra", "--node-name", workload_test.NODE,
          "--kubeconfig", os.path.join(api.dir, "kubeconfig"),
          "--kubelet-registration-dir", self.path("reg"),
          "--kubelet-plugins-dir", self.path("plugins"),
          "--cdi-spec-dir", self.path("cdi"), "--driver-root", root,
          "--nvidia-cdi-hook-path", hook], root)
      reg = kubelet.next_json(lambda e: e.get("event") == "registered")
      self.assertTrue(reg and reg.get("ok"), "%s%s" % (reg, self.logs()))
      answer, names = self.prepare_claim(kubelet, "gpu-claim", uid)
      self.assertEqual(len(names), 1, answer)
      minors = workload_test.gpu_minors("dgx-a100")
      given = [minors[workload_test.gpu_uuid("dgx-a100", 3)]]
      probes = workload_test.other_gpus(minors.values(), given)
      report = self.run_container("nvidia-hooks-dra", ["--device", names[0]],
                                  probes, cdi=True)
      self.check(report, "DRA claim with NVIDIA's hooks",
                 containers.expected_nodes(given), "void", True, probes)
      self.check_record(["nvidia-ctk", "hook"])

  def test_without_a_hook_path_no_hooks_and_links_mounted(self):
    # The default: no hook runs, and the SONAME link is a mount of its own.
    minors = workload_test.gpu_minors("dgx-a100")
    kubelet = self.start("dgx-a100", ["--device-list-strategy", "cdi-cri"])
    self.registered(kubelet, "nvidia.com/gpu")
    a = self.allocated(kubelet, "nvidia.com/gpu", 1, "pod-a")
    with open(self.path("cdi", "k8s.device-plugin.nvidia.com-gpu.json"),
              encoding="utf-8") as f:
      spec = json.load(f)
    self.assertNotIn("hooks", spec["containerEdits"])
    mounted = [m["containerPath"] for m in spec["containerEdits"]["mounts"]]
    self.assertIn("%s/libnvidia-ml.so.1" % LIB_DIR, mounted)
    flags, _ = containers.podman_flags(a["response"])
    given = [minors[i] for i in a["devices"]]
    probes = workload_test.other_gpus(minors.values(), given)
    report = self.run_container("no-nvidia-hooks", flags, probes, cdi=True)
    self.check(report, "device plugin without NVIDIA's hooks",
               containers.expected_nodes(given), "void", True, probes)
    self.assertEqual(self.record(), [])


if __name__ == "__main__":
  import unittest  # pylint: disable=import-outside-toplevel
  unittest.main()
