"""A workload container on a MIG device made at run time, with real parts:
the fake NVML's MIG state shared by every process (FAKE_NVML_MIG_STATE),
the daemon with --device-api=dra on the fake h100-mig machine, the API
server emulator holding a claim allocated as the scheduler would, `dpctl
dra-kubelet` preparing it, and podman + runc starting the container from
the CDI device name the kubelet got back. The container must see its GPU's
node and the two MIG capability nodes of its GPU and compute instance
(nvidia-cap<N>, numbered as the driver's mig-minors lists them), may open
them, and may not open any other GPU's or MIG instance's node: as the
static MIG tests check.

GPU 0 of h100-mig starts full (3g.40gb at memory slices 4-7 as GPU
instance 2, 2g.20gb at 0-1, two 1g.10gb at 2 and 3). Two ways to a 1g.10gb
at memory slice 4 (GPU instance 11, compute instance 0):
  - made by hand: the 3g.40gb destroyed and the 1g.10gb made with
    `fake-nvml mig`, as `nvidia-smi mig -dci/-dgi/-cgi -C` would on a node,
    before the daemon starts; the daemon serves it as any MIG device;
  - made at prepare (--feature-gates=DynamicMIG=true, the 1.36 emulator):
    GPU 0 emptied first, the daemon publishes its profile placements, the
    claim is allocated to the 1g.10gb placement at slice 4, and the prepare
    makes the GPU and compute instance; unpreparing destroys them. Its
    capability nodes are not made on the host beforehand: no nvidia-modprobe
    runs for an instance made at prepare.
"""

import os
import stat
import subprocess
import sys

import containers
import fixture
import podman

sys.path.insert(0, os.path.join(fixture.SOURCE, "tests", "kube"))
# pylint: disable=wrong-import-position
import emulator_fixture  # noqa: E402

MACHINE = "h100-mig"
NODE = "node-1"
GPU0_MINOR, GPU1_MINOR = 0, 1
# GPU instances of GPU 0 that stay as the machine file makes them.
KEPT_GIS = (3, 9, 10)
# The 1g.10gb made at memory slice 4: the GPU instance ID of that tree
# node (fake_nvml/README.md) and its whole compute instance.
MADE_GI, MADE_CI = 11, 0
MADE_DEVICE = "gpu-0-mig-1g10gb-19-4"


class DynamicMigTest(fixture.RuntimeTest):
  """One claim on a MIG device made at run time, in one container."""

  def setUp(self):
    super().setUp()
    self.state = self.path("mig-state")

  def env(self):
    return dict(os.environ, FAKE_NVML_MACHINE=fixture.machine_file(MACHINE),
                FAKE_NVML_MIG_STATE=self.state)

  def mig(self, *args):
    """`fake-nvml mig -i 0 ARGS` on the shared MIG state; its output."""
    p = subprocess.run([fixture.FAKE_NVML_TOOL, "mig", "-i", "0"] +
                       list(args), capture_output=True, text=True,
                       check=False, timeout=fixture.TIMEOUT, env=self.env())
    self.assertEqual(p.returncode, 0, "fake-nvml mig %s: %s%s" % (
        " ".join(args), p.stdout, p.stderr))
    return p.stdout

  def make_cap_nodes(self, root, gi, ci):
    """The capability nodes of GPU 0's GPU instance `gi` and its compute
    instance `ci` under root/dev, as nvidia-modprobe makes them on a node
    when `nvidia-smi mig` made the instances (`fake-nvml rootfs` makes
    those of the machine file's instances only)."""
    for n in (fixture.mig_cap_minor(GPU0_MINOR, gi),
              fixture.mig_cap_minor(GPU0_MINOR, gi, ci)):
      path = os.path.join(root, "dev", "nvidia-caps", "nvidia-cap%d" % n)
      os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(fixture.CAPS_MAJOR, n))
      os.chmod(path, 0o666)

  def start(self, api, root, *flags):
    """The DRA kubelet emulator and the daemon (--device-api=dra, `flags`)
    on the shared MIG state; the kubelet once the driver registered."""
    kubelet = fixture.Process(
        [fixture.DPCTL, "dra-kubelet", "--registry-dir", self.path("reg"),
         "--json", "--no-health"], self.path("dra-kubelet.err"), stdin=True)
    self.processes.append(kubelet)
    self.assertIsNotNone(
        kubelet.next_json(lambda e: e.get("event") == "listening"),
        kubelet.stderr())
    os.environ["FAKE_NVML_MIG_STATE"] = self.state
    self.addCleanup(os.environ.pop, "FAKE_NVML_MIG_STATE", None)
    self.start_plugin(MACHINE, [
        "--device-api", "dra", "--node-name", NODE, "--kubeconfig",
        os.path.join(api.dir, "kubeconfig"), "--kubelet-registration-dir",
        self.path("reg"), "--kubelet-plugins-dir", self.path("plugins"),
        "--cdi-spec-dir", self.path("cdi"), "--driver-root", root] +
                      list(flags), root)
    reg = kubelet.next_json(lambda e: e.get("event") == "registered")
    self.assertTrue(reg and reg.get("ok"), "%s%s" % (reg, self.logs()))
    api.client.create("nodes", {"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": NODE}})
    return kubelet

  def prepared(self, api, kubelet, name, device):
    """Claim ns/<name> allocated to `device` of this node as the scheduler
    would, prepared; (its UID, its CDI device names)."""
    claim = api.client.create("resourceclaims",
                              emulator_fixture.claim(name, "ns"),
                              namespace="ns")
    claim["status"] = {"allocation": {"devices": {"results": [{
        "request": "gpu", "driver": emulator_fixture.DRIVER, "pool": NODE,
        "device": device}]}}}
    uid = api.client.update("resourceclaims", claim, namespace="ns",
                            status=True)["metadata"]["uid"]
    answer, names = self.prepare_claim(kubelet, name, uid,
                                       emulator_fixture.DRIVER)
    self.assertEqual(len(names), 1, answer)
    self.assertTrue(names[0].startswith("k8s.gpu.nvidia.com/claim="), names)
    return uid, names

  def check_container(self, what, names, gi, ci):
    """A container given CDI devices `names` sees GPU 0's node and the
    capability nodes of GPU instance `gi` and compute instance `ci`, may
    open them, and may not open GPU 1's node or the capability nodes of
    GPU 0's other instances."""
    mine = [fixture.mig_cap_minor(GPU0_MINOR, gi),
            fixture.mig_cap_minor(GPU0_MINOR, gi, ci)]
    others = [c for g in KEPT_GIS
              for c in (fixture.mig_cap_minor(GPU0_MINOR, g),
                        fixture.mig_cap_minor(GPU0_MINOR, g, 0))]
    probes = ([(fixture.NVIDIA_MAJOR, GPU1_MINOR)] +
              [(fixture.CAPS_MAJOR, c) for c in others])
    name = podman.container_name(what)
    self.containers.append(name)
    flags = ["--cap-add", "MKNOD"]
    for n in names:
      flags += ["--device", n]
    cmd = containers.command(
        name, flags, self.path("cdi"),
        ["--rm", podman.BASE_IMAGE, "sh", "-c", containers.REPORT_SCRIPT,
         "sh"] + ["%d:%d" % p for p in probes])
    p = subprocess.run(cmd, capture_output=True, text=True, check=False,
                       timeout=4 * fixture.TIMEOUT)
    self.assertEqual(p.returncode, 0, "the container %s did not run:\n%s\n"
                     "%s\n%s%s" % (what, " ".join(cmd), p.stderr, p.stdout,
                                   self.logs()))
    report = containers.Report(p.stdout)
    self.assertEqual(report.nodes,
                     containers.expected_nodes([GPU0_MINOR], mine),
                     "%s: device nodes\n%s" % (what, report.text))
    for path in report.nodes:
      self.assertEqual(report.opens.get(path), containers.NO_DRIVER,
                       "%s: opening %s\n%s" % (what, path, report.text))
    self.assertEqual(report.probes,
                     {"%d:%d" % p: containers.DENIED for p in probes},
                     "%s: other GPUs' and instances' numbers\n%s" % (
                         what, report.text))
    self.assertEqual(report.env, "void", report.text)

  def test_container_on_a_mig_device_made_at_run_time(self):
    root = self.make_root(MACHINE, driver=True)
    self.mig("--dci", "--gi", "2")
    self.mig("--dgi", "--gi", "2")
    made = self.mig("--cgi", "1g.10gb:4", "-C")
    self.assertIn("created gi %d 1g.10gb" % MADE_GI, made)
    self.assertIn("gi %d created ci %d" % (MADE_GI, MADE_CI), made)
    self.make_cap_nodes(root, MADE_GI, MADE_CI)
    with emulator_fixture.Emulator(directory=self.path("api")) as api:
      kubelet = self.start(api, root)
      _, names = self.prepared(api, kubelet, "mig-claim", MADE_DEVICE)
      self.check_container("mig-by-hand", names, MADE_GI, MADE_CI)
      self.assertEqual(api.violations(), [])

  def test_container_on_a_mig_device_made_at_prepare(self):
    root = self.make_root(MACHINE, driver=True)
    self.mig("--dci")
    self.mig("--dgi")
    self.assertEqual(self.mig("--lgi"), "")
    with emulator_fixture.Emulator("--kube-version", "1.36",
                                   directory=self.path("api")) as api:
      kubelet = self.start(api, root, "--feature-gates=DynamicMIG=true")
      uid, names = self.prepared(api, kubelet, "mig-claim", MADE_DEVICE)
      # The prepare made the GPU instance at the placement and its whole
      # compute instance.
      self.assertEqual(self.mig("--lgi"),
                       "gpu 0 gi %d profile 1g.10gb id 19 placement 4:1\n" %
                       MADE_GI, self.logs())
      self.assertTrue(self.mig("--lci").startswith(
          "gpu 0 gi %d ci %d profile 1g.10gb " % (MADE_GI, MADE_CI)),
                      self.logs())
      self.check_container("mig-at-prepare", names, MADE_GI, MADE_CI)
      kubelet.write_line("unprepare %s ns/mig-claim/%s" % (
          emulator_fixture.DRIVER, uid))
      un = kubelet.next_json(
          lambda e: e.get("event") in ("unprepare", "unprepare_failed"))
      self.assertEqual(
          (un or {}).get("claims", {}).get(uid, {}).get("error"), "",
          "%s%s" % (un, self.logs()))
      self.assertEqual(self.mig("--lgi"), "", self.logs())
      self.assertFalse(os.path.exists(self.path(
          "cdi", "k8s.gpu.nvidia.com-claim_%s.json" % uid)))
      self.assertEqual(api.violations(), [])

