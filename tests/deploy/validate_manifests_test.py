#!/usr/bin/python3
"""The manifest checks catch what they claim to: each case breaks the base
DaemonSet (deploy/base/daemonset.yaml) in one way and expects a problem naming
the field. dra_wiring_test.py does the same for the DRA overlays, and
dra_kinds_test.py for the DeviceClass and admission policy objects."""

import copy
import os
import sys
import unittest

import yaml

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# pylint: disable=wrong-import-position
import k8s_schema
import validate_manifests
# pylint: enable=wrong-import-position

DEPLOY = os.path.join(HERE, "..", "..", "deploy")


def load(path):
  with open(os.path.join(DEPLOY, path), encoding="utf-8") as f:
    return [d for d in yaml.safe_load_all(f) if d is not None]


BASE = load("base/daemonset.yaml")[0]


def container(ds):
  return ds["spec"]["template"]["spec"]["containers"][0]


def pod_spec(ds):
  return ds["spec"]["template"]["spec"]


# (name, change to a copy of the base DaemonSet, text the problem must hold)
CASES = [
    ("unknown field", lambda d: container(d).update(imagePolicy="x"),
     "spec.template.spec.containers[0].imagePolicy: unknown field"),
    ("wrong type", lambda d: container(d)["ports"][0].update(
        containerPort="9445"),
     "spec.template.spec.containers[0].ports[0].containerPort: expected an "
     "integer"),
    ("string as list", lambda d: container(d).update(args="--labels"),
     "spec.template.spec.containers[0].args: expected a list"),
    ("unquoted env value", lambda d: container(d)["env"].append(
        {"name": "X", "value": 1}), "env[4].value: expected a string"),
    ("required field", lambda d: container(d)["volumeMounts"][0].pop(
        "mountPath"), "volumeMounts[0].mountPath: required field missing"),
    ("privileged with allowPrivilegeEscalation false",
     lambda d: container(d)["securityContext"].update(privileged=True),
     "cannot set allowPrivilegeEscalation to false and privileged to true"),
    ("selector not matching", lambda d: d["spec"]["selector"].update(
        matchLabels={"app": "other"}),
     "spec.selector: does not match spec.template.metadata.labels"),
    ("mount of a missing volume", lambda d: pod_spec(d)["volumes"].pop(0),
     "volumeMounts[0].name: no volume named 'device-plugins'"),
    ("probe on an unknown port name",
     lambda d: container(d)["livenessProbe"]["httpGet"].update(port="http"),
     "livenessProbe.httpGet.port: 'http' names no port"),
    ("bad hostPath type", lambda d: pod_spec(d)["volumes"][0]["hostPath"]
     .update(type="Dir"), "volumes[0].hostPath.type: 'Dir' is not one of"),
    ("bad label value", lambda d: d["metadata"]["labels"].update(x="a b"),
     "metadata.labels.x: 'a b' is not a valid label value"),
    ("request over limit", lambda d: container(d)["resources"]["requests"]
     .update(memory="1Gi"), "resources.requests.memory: 1Gi exceeds"),
    ("no toleration", lambda d: pod_spec(d).pop("tolerations"),
     "tolerations: no toleration for nvidia.com/gpu"),
    ("no priority class", lambda d: pod_spec(d).pop("priorityClassName"),
     "priorityClassName: None, expected system-node-critical"),
    ("no cdi mount", lambda d: container(d)["volumeMounts"].pop(1),
     "nothing mounts the host's /var/run/cdi at /var/run/cdi"),
    ("driver root writable", lambda d: container(d)["volumeMounts"][2].pop(
        "readOnly"), "the driver root should be mounted readOnly"),
    ("no capability drop", lambda d: container(d)["securityContext"].pop(
        "capabilities"), "securityContext.capabilities.drop: expected [ALL]"),
    ("no readiness probe", lambda d: container(d).pop("readinessProbe"),
     "readinessProbe: expected an httpGet on /readyz"),
    ("liveness on readyz", lambda d: container(d)["livenessProbe"]["httpGet"]
     .update(path="/readyz"), "livenessProbe.httpGet.path: '/readyz'"),
    ("no requests", lambda d: container(d)["resources"].pop("requests"),
     "resources.requests.cpu: missing"),
    ("no memory limit", lambda d: container(d)["resources"].pop("limits"),
     "resources.limits.memory: missing"),
    ("no NVML", lambda d: container(d)["env"].pop(0),
     "NVIDIA_VISIBLE_DEVICES is None, expected all"),
    ("OnDelete", lambda d: d["spec"].update(updateStrategy={"type":
                                                           "OnDelete"}),
     "spec.updateStrategy.type: 'OnDelete', expected RollingUpdate"),
    ("wrong namespace", lambda d: d["metadata"].update(namespace="default"),
     "metadata.namespace: 'default', expected kube-system"),
    ("unexpected labels", lambda d: container(d)["args"].append("--labels"),
     "--labels is True, expected False"),
    ("no state mount", lambda d: container(d)["volumeMounts"].pop(4),
     "nothing mounts the host's /var/lib/gpu-device-plugin at "
     "/var/lib/gpu-device-plugin"),
    ("state elsewhere", lambda d: container(d)["args"].append(
        "--state-dir=/tmp/state"),
     "nothing mounts the host's /var/lib/gpu-device-plugin at /tmp/state"),
    ("state read-only", lambda d: container(d)["volumeMounts"][4].update(
        readOnly=True), "/var/lib/gpu-device-plugin must be writable"),
]


class CheckRenderingTest(unittest.TestCase):

  def test_base_passes(self):
    self.assertEqual(validate_manifests.check_rendering("base", [BASE]), [])

  def test_each_break_is_named(self):
    for name, change, want in CASES:
      with self.subTest(name):
        ds = copy.deepcopy(BASE)
        change(ds)
        problems = validate_manifests.check_rendering("base", [ds])
        self.assertTrue(any(want in p for p in problems),
                        f"no problem holds {want!r}: {problems}")
        self.assertTrue(all(p.startswith(
            "base: DaemonSet ")
                            for p in problems), problems)

  def test_cpu_manager_needs_privileged_and_device_specs(self):
    problems = validate_manifests.check_rendering("overlays/cpu-manager",
                                                  [BASE])
    self.assertTrue(any("securityContext.privileged: expected true" in p
                        for p in problems), problems)
    self.assertTrue(any("--pass-device-specs is False" in p
                        for p in problems), problems)

  def test_config_file_needs_its_configmap(self):
    ds = copy.deepcopy(BASE)
    container(ds)["env"].append({"name": "CONFIG_FILE",
                                 "value": "/etc/gdp/config.yaml"})
    container(ds)["volumeMounts"].append({"name": "config",
                                          "mountPath": "/etc/gdp"})
    pod_spec(ds)["volumes"].append({"name": "config",
                                    "configMap": {"name": "cfg"}})
    problems = validate_manifests.check_rendering("overlays/time-slicing",
                                                  [ds])
    self.assertTrue(any("ConfigMap kube-system/cfg is not in the rendered"
                        in p for p in problems), problems)
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "cfg", "namespace": "kube-system"},
          "data": {"config.yaml": "version: v1\nsharing:\n  timeSlicing:\n"
                                  "    resources:\n    - name: "
                                  "nvidia.com/gpu\n      replicas: 1\n"}}
    problems = validate_manifests.check_rendering("overlays/time-slicing",
                                                  [cm, ds])
    self.assertTrue(any("replicas must be an integer >= 2, got 1" in p
                        for p in problems), problems)

  def test_unknown_kind_is_refused(self):
    obj = {"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "x"}}
    self.assertIn("is not a kind this test knows",
                  k8s_schema.check_object(obj)[0])

  def test_example_pod_passes(self):
    for obj in load("examples/nvidia-smi-pod.yaml"):
      self.assertEqual(k8s_schema.check_object(obj), [])

  def test_quantities(self):
    self.assertEqual(k8s_schema.parse_quantity("50m"), 0.05)
    self.assertEqual(k8s_schema.parse_quantity("64Mi"), 64 * 2**20)
    self.assertEqual(k8s_schema.parse_quantity(2), 2.0)
    self.assertIsNone(k8s_schema.parse_quantity("lots"))

  def test_settings_flag_beats_env(self):
    c = {"args": ["--labels", "--config-file=/a"],
         "env": [{"name": "CONFIG_FILE", "value": "/b"},
                 {"name": "PASS_DEVICE_SPECS", "value": "true"}]}
    self.assertEqual(validate_manifests.setting(c, "--labels", "GDP_LABELS"),
                     "true")
    self.assertEqual(validate_manifests.setting(c, "--config-file",
                                                "CONFIG_FILE"), "/a")
    self.assertEqual(validate_manifests.setting(c, "--pass-device-specs",
                                                "PASS_DEVICE_SPECS"), "true")
    self.assertIsNone(validate_manifests.setting(c, "--mig-strategy",
                                                 "MIG_STRATEGY"))

  def test_settings_aliases_in_order(self):
    flags = ("--kubelet-plugins-dir", "--kubelet-plugins-directory-path")
    envs = ("KUBELET_PLUGINS_DIR", "KUBELET_PLUGINS_DIRECTORY_PATH")
    c = {"args": ["--kubelet-plugins-directory-path=/flag"],
         "env": [{"name": "KUBELET_PLUGINS_DIR", "value": "/ours"}]}
    self.assertEqual(validate_manifests.setting(c, flags, envs), "/flag")
    c = {"env": [{"name": "KUBELET_PLUGINS_DIRECTORY_PATH", "value": "/nv"},
                 {"name": "KUBELET_PLUGINS_DIR", "value": "/ours"}]}
    self.assertEqual(validate_manifests.setting(c, flags, envs), "/ours")
    c = {"env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {
        "fieldPath": "spec.nodeName"}}}]}
    self.assertIsNone(validate_manifests.setting(c, "--node-name",
                                                 "NODE_NAME"))


if __name__ == "__main__":
  unittest.main()
