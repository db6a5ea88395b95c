"""DRA consumable shares, end to end with real parts: the daemon
(--device-api=dra --feature-gates=ConsumableShares=true
--consumable-shares=memory) on the fake NVML, the API server emulator
(1.36) holding claims allocated as the scheduler allocates shares of one
GPU (allowMultipleAllocations: a result with a shareID and the memory it
consumed), `dpctl dra-kubelet` preparing them, and podman + runc starting
one container per claim from the CDI device names the kubelet got back.
Our hook (gdp-cdi-hook, from the build) runs inside the runtime; the fake
NVML keeps what it applied in a file that `fake-nvml memory-limits --get
--json` reads: each container's own leaf cgroup (v2) limited to its
claim's share of that GPU, nothing else. Unpreparing one claim keeps the
other's CDI device. On a driver older than R615 with
--unenforced-shares=allow (shares published though nothing can enforce
them) the container does not start, with the hook's message.
"""

import os
import subprocess
import sys

import yaml

import containers
import fixture
import memory_limit_test
import podman

sys.path.insert(0, os.path.join(fixture.SOURCE, "tests", "kube"))
# pylint: disable=wrong-import-position
import emulator_fixture  # noqa: E402

NODE = "node-1"
KIND = "k8s.gpu.nvidia.com/claim"
MIB = 1 << 20
SHARE_A = "a7c1e0d2-5b3f-4c8e-9d10-0f1e2d3c4b5a"
SHARE_B = "b2d4f6a8-1c3e-4a5b-8c7d-9e0f1a2b3c4d"


class DraSharesTest(memory_limit_test.LimitChecks, fixture.RuntimeTest):
  """Two claims, each a share of gpu-0, in two containers."""

  def setUp(self):
    super().setUp()
    if not os.path.exists(memory_limit_test.HOOK):
      self.fail("%s is missing: build the gdp-cdi-hook target" %
                memory_limit_test.HOOK)
    if fixture.cgroup2_mount() is None:
      self.skipTest("no cgroup2 mount on this host")
    self.limits = self.path("memory-limits")

  def hook_wrapper(self, machine):
    """The hook path for the daemon's specs: our hook, run under its own
    name, with the fake NVML's environment (a hook runs with its CDI
    entry's env only, and a spec for a real node carries none)."""
    wrapper = self.path("gdp-cdi-hook")
    with open(wrapper, "w", encoding="utf-8") as f:
      f.write("#!/bin/bash\nexport FAKE_NVML_MACHINE=%s\n"
              "export FAKE_NVML_MEMORY_LIMITS=%s\n"
              "exec -a gdp-cdi-hook %s \"$@\"\n" % (
                  fixture.machine_file(machine), self.limits,
                  memory_limit_test.HOOK))
    os.chmod(wrapper, 0o755)
    return wrapper

  def start(self, api, machine, *flags):
    """The DRA kubelet emulator and the daemon with consumable shares on
    `machine` (a root with the fake NVML as its driver and cgroup v2 in its
    mountinfo); the kubelet once the driver registered."""
    root = self.make_root(machine, driver=True)
    os.makedirs(os.path.join(root, "proc", "self"), exist_ok=True)
    with open(os.path.join(root, "proc", "self", "mountinfo"), "w",
              encoding="utf-8") as f:
      f.write("35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")
    kubelet = fixture.Process(
        [fixture.DPCTL, "dra-kubelet", "--registry-dir", self.path("reg"),
         "--json", "--no-health"], self.path("dra-kubelet.err"), stdin=True)
    self.processes.append(kubelet)
    self.assertIsNotNone(
        kubelet.next_json(lambda e: e.get("event") == "listening"),
        kubelet.stderr())
    self.start_plugin(machine, [
        "--device-api", "dra", "--node-name", NODE, "--kubeconfig",
        os.path.join(api.dir, "kubeconfig"), "--kubelet-registration-dir",
        self.path("reg"), "--kubelet-plugins-dir", self.path("plugins"),
        "--cdi-spec-dir", self.path("cdi"), "--driver-root", root,
        "--feature-gates=ConsumableShares=true", "--consumable-shares=memory",
        "--memory-limit-hook-path", self.hook_wrapper(machine)] + list(flags),
                      root)
    reg = kubelet.next_json(lambda e: e.get("event") == "registered")
    self.assertTrue(reg and reg.get("ok"), "%s%s" % (reg, self.logs()))
    api.client.create("nodes", {"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": NODE}})
    return kubelet

  def prepared_share(self, api, kubelet, name, share, memory):
    """Claim ns/<name> allocated as the 1.36 scheduler allocates a share
    of gpu-0, prepared; (claim UID, its CDI device names)."""
    claim = emulator_fixture.claim(name, "ns")
    claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {
        "requests": {"memory": memory}}
    claim = api.client.create("resourceclaims", claim, namespace="ns")
    claim["status"] = {"allocation": {"devices": {"results": [{
        "request": "gpu", "driver": emulator_fixture.DRIVER, "pool": NODE,
        "device": "gpu-0", "shareID": share,
        "consumedCapacity": {"memory": memory}}]}}}
    uid = api.client.update("resourceclaims", claim, namespace="ns",
                            status=True)["metadata"]["uid"]
    answer, names = self.prepare_claim(kubelet, name, uid,
                                       emulator_fixture.DRIVER)
    self.assertEqual([d.get("share_id") for d in answer["devices"]], [share],
                     answer)
    self.assertEqual(names, ["%s=%s-gpu-0-share-%s" % (KIND, uid, share)],
                     answer)
    return uid, names

  def start_container(self, what, names, check=True):
    """A detached container given the CDI devices `names`: its name, or
    with check=False podman's finished process."""
    name = podman.container_name(what)
    self.containers.append(name)
    flags = []
    for n in names:
      flags += ["--device", n]
    cmd = containers.command(name, flags, self.path("cdi"),
                             ["-d", podman.BASE_IMAGE, "sleep", "600"])
    p = subprocess.run(cmd, capture_output=True, text=True, check=False,
                       timeout=4 * fixture.TIMEOUT)
    if not check:
      return p
    self.assertEqual(p.returncode, 0, "%s did not start:\n%s\n%s\n%s%s" % (
        what, " ".join(cmd), p.stderr, p.stdout, self.logs()))
    return name

  def spec_devices(self, uid):
    """The device names in claim `uid`'s CDI spec ([] when it is gone)."""
    path = self.path("cdi", "k8s.gpu.nvidia.com-claim_%s.json" % uid)
    if not os.path.exists(path):
      return []
    with open(path, encoding="utf-8") as f:
      return [d["name"] for d in yaml.safe_load(f)["devices"]]

  def test_dra_shares_of_one_gpu_in_two_containers(self):
    machine = "hgx-h100-r615"
    gpu0 = memory_limit_test.machine_uuids(machine)[0]
    with emulator_fixture.Emulator("--kube-version", "1.36",
                                   directory=self.path("api")) as api:
      kubelet = self.start(api, machine)
      uid_a, names_a = self.prepared_share(api, kubelet, "claim-a", SHARE_A,
                                           "10Gi")
      uid_b, names_b = self.prepared_share(api, kubelet, "claim-b", SHARE_B,
                                           "30Gi")
      a = self.start_container("dra-share-a", names_a)
      b = self.start_container("dra-share-b", names_b)
      cg_a, cg_b = self.cgroup_of(a), self.cgroup_of(b)
      self.assertNotEqual(cg_a, cg_b)
      # Each container's own cgroup at its claim's share; nothing else.
      self.assertEqual(self.applied(), {
          (gpu0, cg_a): (0, 10240 * MIB),
          (gpu0, cg_b): (0, 30720 * MIB),
      })
      kubelet.write_line("unprepare %s ns/claim-a/%s" % (
          emulator_fixture.DRIVER, uid_a))
      un = kubelet.next_json(
          lambda e: e.get("event") in ("unprepare", "unprepare_failed"))
      self.assertEqual(
          (un or {}).get("claims", {}).get(uid_a, {}).get("error"), "",
          "%s%s" % (un, self.logs()))
      self.assertEqual(self.spec_devices(uid_a), [])
      self.assertEqual(self.spec_devices(uid_b),
                       [names_b[0].split("=", 1)[1]])
      self.assertEqual(api.violations(), [])

  def test_dra_share_refused_before_r615(self):
    # hgx-h100: the same GPUs with a 550 driver. --unenforced-shares=allow
    # publishes shares anyway; the hook refuses the container.
    machine = "hgx-h100"
    gpu0 = memory_limit_test.machine_uuids(machine)[0]
    with emulator_fixture.Emulator("--kube-version", "1.36",
                                   directory=self.path("api")) as api:
      kubelet = self.start(api, machine, "--unenforced-shares=allow")
      _, names = self.prepared_share(api, kubelet, "claim-old", SHARE_A,
                                     "10Gi")
      p = self.start_container("dra-share-old", names, check=False)
      self.assertNotEqual(p.returncode, 0, "started unlimited:\n%s" % p.stdout)
      said = p.stderr + p.stdout
      self.assertIn("gdp-cdi-hook: container ", said)
      self.assertIn("cannot limit GPU", said)
      self.assertIn(gpu0, said)
      self.assertIn("Not Supported", said)
      self.assertIn("driver 550.54.15", said)
      self.assertIn("R615", said)
      self.assertEqual(self.applied(), {})
