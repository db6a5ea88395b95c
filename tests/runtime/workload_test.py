"""Workload containers started by podman and runc from the plugin's
Allocate answers, for each device-list strategy, MIG and time-slicing, and
from a DRA claim's CDI spec: each container must see exactly the device
nodes (real character devices made by `fake-nvml rootfs`) and
NVIDIA_VISIBLE_DEVICES of what it was given.
"""

import json
import os
import subprocess
import sys
import unittest

import yaml

import containers
import fixture
import podman

sys.path.insert(0, os.path.join(fixture.SOURCE, "tests", "kube"))
# pylint: disable=wrong-import-position
import emulator_fixture  # noqa: E402

NVML_ENV = "NVIDIA_VISIBLE_DEVICES"


def gpu_minors(machine):
  """{GPU UUID: minor} of a shipped machine file."""
  with open(fixture.machine_file(machine), encoding="utf-8") as f:
    return {g["uuid"]: g["minor"] for g in yaml.safe_load(f)["gpus"]}


def mig_devices(machine):
  """{MIG UUID: (GPU minor, GPU instance ID, compute instance ID)} as NVML
  (the fake, through `gpu-device-plugin discover`) reports them."""
  p = subprocess.run(
      [fixture.PLUGIN, "discover"], capture_output=True, text=True,
      check=True, timeout=fixture.TIMEOUT,
      env=dict(os.environ, LD_LIBRARY_PATH=fixture.FAKE_NVML_LIBDIR,
               FAKE_NVML_MACHINE=fixture.machine_file(machine)))
  out = {}
  for gpu in json.loads(p.stdout)["gpus"]:
    for mig in gpu.get("migs", []):
      out[mig["uuid"]] = (gpu["minor"], mig["gpu_instance"],
                          mig["compute_instance"])
  return out


class WorkloadTest(fixture.RuntimeTest):
  """Plugin on the host (from the build), containers from its answers."""

  def run_container(self, what, flags, probes, cdi=False, detach=False):
    """Runs the report script, probing `probes` ((major, minor) pairs), in
    a container of the base image with `flags`; its Report (detach: the
    container's name, left sleeping; report_of runs the script). The
    container may mknod (CAP_MKNOD, in containerd's default set too)."""
    name = podman.container_name(what)
    self.containers.append(name)
    flags = ["--cap-add", "MKNOD"] + flags
    if detach:
      tail = ["-d", podman.BASE_IMAGE, "sleep", "600"]
    else:
      tail = ["--rm", podman.BASE_IMAGE, "sh", "-c", containers.REPORT_SCRIPT,
              "sh"] + ["%d:%d" % p for p in probes]
    cmd = containers.command(name, flags, self.path("cdi") if cdi else None,
                             tail)
    p = subprocess.run(cmd, capture_output=True, text=True, check=False,
                       timeout=4 * fixture.TIMEOUT)
    self.assertEqual(p.returncode, 0, "the container %s did not run:\n%s\n"
                     "%s\n%s" % (what, " ".join(cmd), p.stderr, p.stdout))
    return name if detach else containers.Report(p.stdout)

  def report_of(self, name, probes):
    """The report script's Report, run in detached container `name`."""
    p = podman.podman("exec", name, "sh", "-c", containers.REPORT_SCRIPT,
                      "sh", *["%d:%d" % p for p in probes],
                      timeout=4 * fixture.TIMEOUT)
    return containers.Report(p.stdout)

  def start(self, machine, args, driver=True):
    """Fixture root (with a driver for CDI specs), kubelet emulator and
    plugin with `args`."""
    root = self.make_root(machine, driver=driver)
    kubelet = self.start_kubelet()
    self.start_plugin(machine, ["--driver-root", root, "--cdi-spec-dir",
                                self.path("cdi")] + args, root)
    return kubelet

  def check(self, report, what, nodes, env, nvml, probes):
    """The container saw exactly `nodes`, may open them (the device cgroup
    allows them), may not open `probes` (other GPUs' numbers), and has
    NVIDIA_VISIBLE_DEVICES `env` and NVML mounted or not (`nvml`)."""
    self.assertEqual(report.nodes, nodes, "%s: device nodes\n%s" %
                     (what, report.text))
    for path in nodes:
      if path.startswith("/dev/"):
        self.assertEqual(report.opens.get(path), containers.NO_DRIVER,
                         "%s: opening %s\n%s" % (what, path, report.text))
    self.assertEqual(report.probes,
                     {"%d:%d" % p: containers.DENIED for p in probes},
                     "%s: other GPUs' numbers\n%s" % (what, report.text))
    self.assertEqual(report.env, env, "%s: %s\n%s" % (what, NVML_ENV,
                                                      report.text))
    self.assertEqual(report.nvml, nvml, "%s: NVML mounted\n%s" %
                     (what, report.text))

  def strategy(self, strategy, extra_args, env_of, volume=False, cdi=False):
    """Two pods on the DGX A100 (2 GPUs, then 1 other): each container sees
    its GPUs' nodes and may open no other GPU."""
    minors = gpu_minors("dgx-a100")
    kubelet = self.start(
        "dgx-a100", ["--device-list-strategy", strategy] + extra_args)
    self.registered(kubelet, "nvidia.com/gpu")
    taken = set()
    for pod, count in (("pod-a", 2), ("pod-b", 1)):
      a = self.allocated(kubelet, "nvidia.com/gpu", count, pod)
      ids = a["devices"]
      self.assertFalse(taken & set(ids), "pods share GPUs: %s" % a)
      taken |= set(ids)
      flags, names = containers.podman_flags(a["response"])
      self.assertEqual(bool(names), cdi, "CDI names in %s" % a)
      given = [minors[i] for i in ids]
      probes = other_gpus(minors.values(), given)
      report = self.run_container(strategy + "-" + pod, flags, probes,
                                  cdi=cdi)
      self.check(report, "%s %s (%s)" % (strategy, pod, ",".join(ids)),
                 containers.expected_nodes(
                     given, volume_units=ids if volume else ()),
                 env_of(ids), cdi, probes)

  def test_envvar_with_device_specs(self):
    self.strategy("envvar", ["--pass-device-specs"], ",".join)

  def test_volume_mounts_with_device_specs(self):
    self.strategy("volume-mounts", ["--pass-device-specs"],
                  lambda ids: fixture.VOLUME_MOUNTS_ROOT, volume=True)

  def test_cdi_cri(self):
    # The spec's shared edits set NVIDIA_VISIBLE_DEVICES=void, as NVIDIA's.
    self.strategy("cdi-cri", [], lambda ids: "void", cdi=True)

  def test_cdi_annotations(self):
    self.strategy("cdi-annotations", [], lambda ids: "void", cdi=True)

  def mig_mixed(self, strategy, extra_args, cdi):
    """h100-mig, MIG strategy mixed: two 1g.10gb MIG devices, one 3g.40gb
    (both on GPU 0) and GPU 1 (MIG disabled) to three containers."""
    migs = mig_devices("h100-mig")
    minors = gpu_minors("h100-mig")
    all_caps = [c for minor, gi, ci in migs.values()
                for c in (fixture.mig_cap_minor(minor, gi),
                          fixture.mig_cap_minor(minor, gi, ci))]
    kubelet = self.start("h100-mig", [
        "--mig-strategy", "mixed", "--device-list-strategy", strategy] +
                         extra_args)
    self.registered(kubelet, "nvidia.com/mig-1g.10gb")
    pods = (("pod-a", "nvidia.com/mig-1g.10gb", 2),
            ("pod-b", "nvidia.com/mig-3g.40gb", 1),
            ("pod-c", "nvidia.com/gpu", 1))
    for pod, resource, count in pods:
      a = self.allocated(kubelet, resource, count, pod)
      ids = a["devices"]
      gpus, caps = set(), []
      for i in ids:
        if i in migs:
          minor, gi, ci = migs[i]
          gpus.add(minor)
          caps += [fixture.mig_cap_minor(minor, gi),
                   fixture.mig_cap_minor(minor, gi, ci)]
        else:
          gpus.add(minors[i])
      probes = (other_gpus(minors.values(), gpus) +
                [(fixture.CAPS_MAJOR, c) for c in all_caps if c not in caps])
      flags, _ = containers.podman_flags(a["response"])
      report = self.run_container("mig-%s-%s" % (strategy, pod), flags,
                                  probes, cdi=cdi)
      self.check(report, "%s %s %s" % (strategy, pod, ids),
                 containers.expected_nodes(sorted(gpus), caps),
                 "void" if cdi else ",".join(ids), cdi, probes)

  def test_mig_mixed_envvar_with_device_specs(self):
    self.mig_mixed("envvar", ["--pass-device-specs"], cdi=False)

  def test_mig_mixed_cdi_cri(self):
    self.mig_mixed("cdi-cri", [], cdi=True)

  def test_time_slicing_two_containers_share_one_gpu(self):
    # GPU 0 of the T4 machine shared (2 replicas), GPU 1 not.
    config = self.path("config.yaml")
    with open(config, "w", encoding="utf-8") as f:
      f.write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
              "    - name: nvidia.com/gpu\n      rename: nvidia.com/shared-gpu"
              "\n      devices: [0]\n      replicas: 2\n")
    minors = gpu_minors("pcie-t4")
    kubelet = self.start("pcie-t4", ["--pass-device-specs", "--config-file",
                                     config])
    self.assertEqual(len(self.registered(kubelet, "nvidia.com/shared-gpu")),
                     2)
    names = []
    units = []
    for pod in ("pod-a", "pod-b"):
      a = self.allocated(kubelet, "nvidia.com/shared-gpu", 1, pod)
      units.append(a["response"]["envs"][NVML_ENV])
      flags, _ = containers.podman_flags(a["response"])
      names.append(self.run_container("shared-" + pod, flags, [],
                                      detach=True))
    self.assertEqual(units[0], units[1], "the replicas are of one GPU")
    # Both run at once, each with that GPU and no other.
    given = [minors[units[0]]]
    probes = other_gpus(minors.values(), given)
    for name in names:
      self.check(self.report_of(name, probes), name,
                 containers.expected_nodes(given), units[0], False, probes)

  def test_dra_claim_cdi_device(self):
    """A claim prepared by the DRA driver: podman injects its CDI device."""
    root = self.make_root("dgx-a100", driver=True)
    with emulator_fixture.Emulator(directory=self.path("api")) as api:
      uid = allocated_claim(api.client, "gpu-3")
      kubelet = fixture.Process(
          [fixture.DPCTL, "dra-kubelet", "--registry-dir", self.path("reg"),
           "--json", "--no-health"], self.path("dra-kubelet.err"),
          stdin=True)
      self.processes.append(kubelet)
      self.assertIsNotNone(
          kubelet.next_json(lambda e: e.get("event") == "listening"),
          kubelet.stderr())
      self.start_plugin("dgx-a100", [
          "--device-api", "dra", "--node-name", NODE, "--kubeconfig",
          os.path.join(api.dir, "kubeconfig"), "--kubelet-registration-dir",
          self.path("reg"), "--kubelet-plugins-dir", self.path("plugins"),
          "--cdi-spec-dir", self.path("cdi"), "--driver-root", root], root)
      reg = kubelet.next_json(lambda e: e.get("event") == "registered")
      self.assertTrue(reg and reg.get("ok"), "%s%s" % (reg, self.logs()))
      claim_answer, names = self.prepare_claim(kubelet, "gpu-claim", uid)
      self.assertEqual(len(names), 1, claim_answer)
      self.assertTrue(names[0].startswith("k8s.gpu.nvidia.com/claim="),
                      names)
      # gpu-3 is the GPU of NVML index 3.
      minors = gpu_minors("dgx-a100")
      given = [minors[gpu_uuid("dgx-a100", 3)]]
      probes = other_gpus(minors.values(), given)
      report = self.run_container("dra-claim", ["--device", names[0]],
                                  probes, cdi=True)
      self.check(report, "DRA claim on gpu-3",
                 containers.expected_nodes(given), "void", True, probes)


NODE = "node-1"


def allocated_claim(client, device):
  """Creates ResourceClaim ns/gpu-claim allocated to `device` of this
  node, as the scheduler would; its UID."""
  claim = client.create("resourceclaims",
                        emulator_fixture.claim("gpu-claim", "ns"),
                        namespace="ns")
  claim["status"] = {"allocation": {"devices": {"results": [{
      "request": "gpu", "driver": emulator_fixture.DRIVER, "pool": NODE,
      "device": device}]}}}
  client.create("nodes", {"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": NODE}})
  return client.update("resourceclaims", claim, namespace="ns",
                       status=True)["metadata"]["uid"]


def other_gpus(all_minors, given):
  """(major, minor) of the machine's GPUs not in `given`: numbers the
  container must not be allowed to open."""
  return [(fixture.NVIDIA_MAJOR, m) for m in sorted(set(all_minors))
          if m not in given]


def gpu_uuid(machine, index):
  with open(fixture.machine_file(machine), encoding="utf-8") as f:
    return yaml.safe_load(f)["gpus"][index]["uuid"]


if __name__ == "__main__":
  unittest.main()
