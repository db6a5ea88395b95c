"""GPU memory limits applied at container creation by our CDI hook
(gdp-cdi-hook, from the build), run by podman and runc from a CDI spec as
cdi/memory_limit.h writes it: DRA shares (one CDI device per share, the
limit in the hook's --share) and a GPU under NVIDIA's env contract
(--gpu-id, the limit in the container's env); and from the device
plugin's own spec and Allocate answers: time-slicing replicas with
memoryPerReplica, one CDI device per replica carrying its share, the
pod's own limit variables ignored. The fake NVML keeps the limits in a
file that `fake-nvml memory-limits --get --json` reads, so the test sees
exactly which cgroup got which limit: each container's own leaf cgroup
(v2), its shares of one GPU added up, nothing else limited. A driver
without the memory-limit API (the machine's driver older than R615, or a
library without the entry points) keeps the container from starting,
with the hook's message in podman's output.
"""

import json
import os
import shutil
import subprocess

import yaml

import containers
import fixture
import podman

HOOK = os.path.join(fixture.BUILD, "src", "gdp-cdi-hook")
FAKE_NVML_PRE_LIMITS_LIB = os.path.join(fixture.BUILD, "fake_nvml",
                                        "pre-limits", "lib",
                                        "libnvidia-ml.so.1")
KIND = "test.gdp.example/share"
MIB = 1 << 20
MAX = (1 << 64) - 1


def machine_uuids(machine):
  with open(fixture.machine_file(machine), encoding="utf-8") as f:
    return [g["uuid"] for g in yaml.safe_load(f)["gpus"]]


class LimitChecks:
  """What a test of limits reads back: a container's own cgroup and the
  limits the fake NVML keeps (in self.limits). Mixed into a
  fixture.RuntimeTest."""

  def cgroup_of(self, name):
    """The container's own cgroup v2 directory, from its first process."""
    pid = podman.podman("inspect", "--format", "{{.State.Pid}}",
                        name).stdout.strip()
    with open("/proc/%s/cgroup" % pid, encoding="utf-8") as f:
      for line in f:
        if line.startswith("0::"):
          return os.path.join(fixture.cgroup2_mount(), line[3:].strip().lstrip("/"))
    self.fail("container %s (pid %s) has no cgroup v2" % (name, pid))
    return None

  def applied(self):
    """{(uuid, cgroup): (soft, hard)} as the fake NVML keeps them."""
    p = subprocess.run([fixture.FAKE_NVML_TOOL, "memory-limits", "--get",
                        "--json", "--limits", self.limits],
                       capture_output=True, text=True, check=False,
                       timeout=fixture.TIMEOUT)
    self.assertEqual(p.returncode, 0, p.stderr)
    return {(e["uuid"], e["cgroup"]): (e["soft"], e["hard"])
            for e in json.loads(p.stdout or "[]")}


class MemoryLimitTest(LimitChecks, fixture.RuntimeTest):
  """Containers started by podman + runc with our hook in their CDI
  devices."""

  def setUp(self):
    super().setUp()
    if not os.path.exists(HOOK):
      self.fail("%s is missing: build the gdp-cdi-hook target" % HOOK)
    if fixture.cgroup2_mount() is None:
      self.skipTest("no cgroup2 mount on this host")
    self.limits = self.path("memory-limits")

  def driver_root(self, machine, library=fixture.FAKE_NVML_LIB):
    """A fixture root with `library` installed as the driver's NVML."""
    root = self.make_root(machine)
    lib = os.path.join(root, "usr/lib/x86_64-linux-gnu")
    os.makedirs(lib, exist_ok=True)
    shutil.copy(library, os.path.join(lib, "libnvidia-ml.so.1"))
    return root

  def hook(self, machine, root, *flags):
    """A CDI hook entry of ours as cdi/memory_limit.h writes it, plus the
    fake NVML's environment (a hook runs with its entry's env only)."""
    return {"hookName": "createRuntime", "path": HOOK,
            "args": ["gdp-cdi-hook", "apply-memory-limits", "--driver-root",
                     root] + list(flags),
            "env": ["FAKE_NVML_MACHINE=" + fixture.machine_file(machine),
                    "FAKE_NVML_MEMORY_LIMITS=" + self.limits],
            "timeout": 30}

  def write_spec(self, devices):
    """The CDI spec of `devices` ({name: hooks}) in <dir>/cdi."""
    spec = {"cdiVersion": "0.5.0", "kind": KIND, "devices": [
        {"name": name, "containerEdits": {"hooks": hooks}}
        for name, hooks in devices.items()]}
    os.makedirs(self.path("cdi"), exist_ok=True)
    with open(self.path("cdi", "test-share.json"), "w",
              encoding="utf-8") as f:
      json.dump(spec, f)

  def start_container(self, what, devices, env=(), check=True):
    """Runs a detached container given CDI `devices`; its name, or with
    check=False the finished podman process."""
    name = podman.container_name(what)
    self.containers.append(name)
    flags = []
    for d in devices:
      flags += ["--device", "%s=%s" % (KIND, d)]
    for e in env:
      flags += ["--env", e]
    cmd = containers.command(name, flags, self.path("cdi"),
                             ["-d", podman.BASE_IMAGE, "sleep", "600"])
    p = subprocess.run(cmd, capture_output=True, text=True, check=False,
                       timeout=4 * fixture.TIMEOUT)
    if not check:
      return p
    self.assertEqual(p.returncode, 0, "%s did not start:\n%s\n%s\n%s" % (
        what, " ".join(cmd), p.stderr, p.stdout))
    return name

  def test_memory_limit_shares_and_env_on_each_containers_cgroup(self):
    machine = "hgx-h100-r615"
    gpu0, gpu1, gpu2 = machine_uuids(machine)[:3]
    root = self.driver_root(machine)

    def share(key, gpu, mib):
      return [self.hook(machine, root, "--share",
                        "%s,%s,%d" % (key, gpu, mib))]
    self.write_spec({
        "claim1-a": share("claim1-a", gpu0, 10240),
        "claim1-b": share("claim1-b", gpu0, 2048),
        "claim1-c": share("claim1-c", gpu1, 4096),
        "claim2-a": share("claim2-a", gpu0, 30720),
        # NVIDIA's contract: the limit comes from the container's env.
        "gpu2": [self.hook(machine, root, "--gpu-id", gpu2)],
    })
    one = self.start_container("shares-1", ["claim1-a", "claim1-b", "claim1-c"])
    two = self.start_container("shares-2", ["claim2-a"])
    three = self.start_container("env-limit", ["gpu2"],
                     env=["NVIDIA_GPU_MEMORY_LIMIT=2048"])
    unlimited = self.start_container("no-limit", ["gpu2"])
    cg1, cg2, cg3 = self.cgroup_of(one), self.cgroup_of(two), \
        self.cgroup_of(three)
    self.assertEqual(len({cg1, cg2, cg3, self.cgroup_of(unlimited)}), 4)
    self.assertEqual(self.applied(), {
        (gpu0, cg1): (0, 12288 * MIB),  # two shares of one GPU add up
        (gpu1, cg1): (0, 4096 * MIB),
        (gpu0, cg2): (0, 30720 * MIB),
        (gpu2, cg3): (0, 2048 * MIB),
    })

  def refused(self, root, machine, what):
    gpu0 = machine_uuids(machine)[0]
    self.write_spec({"share": [self.hook(
        machine, root, "--share", "claim-x,%s,1024" % gpu0)]})
    p = self.start_container(what, ["share"], check=False)
    self.assertNotEqual(p.returncode, 0, "%s started unlimited:\n%s" % (
        what, p.stdout))
    said = p.stderr + p.stdout
    self.assertIn("gdp-cdi-hook: container ", said)
    self.assertIn("cannot limit GPU", said)
    self.assertIn("/sys/fs/cgroup", said)
    self.assertIn("R615", said)
    self.assertEqual(self.applied(), {})
    return said

  def test_memory_limit_refused_by_a_driver_older_than_r615(self):
    # hgx-h100: the same GPUs as hgx-h100-r615 with a 550 driver.
    root = self.driver_root("hgx-h100")
    said = self.refused(root, "hgx-h100", "old-driver")
    self.assertIn(machine_uuids("hgx-h100")[0], said)
    self.assertIn("Not Supported", said)
    self.assertIn("550.54.15", said)

  def test_memory_limit_refused_by_a_library_without_the_entry_points(self):
    if not os.path.exists(FAKE_NVML_PRE_LIMITS_LIB):
      self.fail("%s is missing: build fake_nvml_pre_limits" %
                FAKE_NVML_PRE_LIMITS_LIB)
    root = self.driver_root("hgx-h100-r615", FAKE_NVML_PRE_LIMITS_LIB)
    self.refused(root, "hgx-h100-r615", "old-library")

  # The device plugin: its CDI spec and Allocate answers, with our hook.

  def plugin_hook(self, machine):
    """The hook path for the plugin's spec: a wrapper that runs our hook
    (under its own name, as the runtime would) with the fake NVML's
    environment, which a spec written for a real node does not carry."""
    wrapper = self.path("gdp-cdi-hook")
    with open(wrapper, "w", encoding="utf-8") as f:
      f.write("#!/bin/bash\nexport FAKE_NVML_MACHINE=%s\n"
              "export FAKE_NVML_MEMORY_LIMITS=%s\n"
              "exec -a gdp-cdi-hook %s \"$@\"\n" % (
                  fixture.machine_file(machine), self.limits, HOOK))
    os.chmod(wrapper, 0o755)
    return wrapper

  def replica_plugin(self, machine):
    """Fixture root with a driver, kubelet emulator and the plugin with 4
    time-slicing replicas of 10 GiB per GPU, cdi-cri, packed; the kubelet
    once nvidia.com/gpu registered."""
    config = self.path("config.yaml")
    with open(config, "w", encoding="utf-8") as f:
      f.write("version: v1\nflags:\n  plugin:\n"
              "    deviceListStrategy: cdi-cri\nsharing:\n  timeSlicing:\n"
              "    resources:\n    - name: nvidia.com/gpu\n"
              "      replicas: 4\n      memoryPerReplica: 10Gi\n")
    root = self.make_root(machine, driver=True)
    kubelet = self.start_kubelet()
    self.start_plugin(machine, [
        "--driver-root", root, "--cdi-spec-dir", self.path("cdi"),
        "--config-file", config, "--shared-devices-allocation-policy",
        "packed", "--memory-limit-hook-path", self.plugin_hook(machine)],
                      root)
    self.assertEqual(len(self.registered(kubelet, "nvidia.com/gpu")), 32)
    return kubelet

  def start_replicas(self, kubelet, pod, count, check=True):
    """Allocates `count` replicas to `pod` and starts its container from
    the answer's CDI names: (replica IDs, container name or podman's
    finished process with check=False)."""
    a = self.allocated(kubelet, "nvidia.com/gpu", count, pod)
    flags, names = containers.podman_flags(a["response"])
    self.assertEqual(sorted(names), sorted(
        "k8s.device-plugin.nvidia.com/gpu=" + i for i in a["devices"]), a)
    self.assertEqual(a["response"].get("envs", {}), {}, a)
    name = podman.container_name(pod)
    self.containers.append(name)
    # The pod's own env tries to raise its limit; it comes after the
    # device plugin's, as the kubelet orders them.
    flags += ["--env", "NVIDIA_GPU_MEMORY_LIMIT=81920"]
    cmd = containers.command(name, flags, self.path("cdi"),
                             ["-d", podman.BASE_IMAGE, "sleep", "600"])
    p = subprocess.run(cmd, capture_output=True, text=True, check=False,
                       timeout=4 * fixture.TIMEOUT)
    if not check:
      return a["devices"], p
    self.assertEqual(p.returncode, 0, "%s did not start:\n%s\n%s\n%s%s" % (
        pod, " ".join(cmd), p.stderr, p.stdout, self.logs()))
    return a["devices"], name

  def test_memory_limit_device_plugin_replicas(self):
    kubelet = self.replica_plugin("hgx-h100-r615")
    ids_a, a = self.start_replicas(kubelet, "pod-a", 1)
    ids_b, b = self.start_replicas(kubelet, "pod-b", 2)
    gpu_a = ids_a[0].split("::")[0]
    gpu_b = {i.split("::")[0] for i in ids_b}
    self.assertEqual(len(gpu_b), 1, ids_b)
    cg_a, cg_b = self.cgroup_of(a), self.cgroup_of(b)
    self.assertNotEqual(cg_a, cg_b)
    # One share for A, two added up for B, the pods' env ignored, nothing
    # else limited.
    self.assertEqual(self.applied(), {
        (gpu_a, cg_a): (0, 10240 * MIB),
        (gpu_b.pop(), cg_b): (0, 20480 * MIB),
    })

  def test_memory_limit_device_plugin_replica_refused_before_r615(self):
    # hgx-h100: the same GPUs with a 550 driver; the plugin starts (the
    # hook decides at container creation), the container does not.
    kubelet = self.replica_plugin("hgx-h100")
    ids, p = self.start_replicas(kubelet, "pod-old", 1, check=False)
    self.assertNotEqual(p.returncode, 0, "started unlimited:\n%s" % p.stdout)
    said = p.stderr + p.stdout
    self.assertIn("gdp-cdi-hook: container ", said)
    self.assertIn("cannot limit GPU " + ids[0].split("::")[0], said)
    self.assertIn("R615", said)
    self.assertEqual(self.applied(), {})
