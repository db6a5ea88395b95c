#!/usr/bin/python3
"""validate_manifests.py's DRA checks (dra_wiring.py, config_checks.py) catch
what they claim to: the DRA overlays' objects (deploy/overlays/dra and
dra-both, their patches applied here without kubectl) pass, and each case
breaks them in one way and expects a problem naming the object and field."""

import copy
import os
import sys
import unittest

import yaml

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import validate_manifests  # pylint: disable=wrong-import-position

DEPLOY = os.path.join(HERE, "..", "..", "deploy")


def load(path):
  with open(os.path.join(DEPLOY, path), encoding="utf-8") as f:
    return [d for d in yaml.safe_load_all(f) if d is not None]


BASE = load("base/daemonset.yaml")[0]


def container(ds):
  return ds["spec"]["template"]["spec"]["containers"][0]


def pod_spec(ds):
  return ds["spec"]["template"]["spec"]


# The DRA overlays, built from their files without kubectl: the patches are
# applied the way strategic merge does for the lists they touch.
_MERGE_KEYS = {"containers": "name", "env": "name", "volumeMounts":
               "mountPath", "volumes": "name"}


def merge(base, patch):
  """base with a strategic-merge patch applied (merge keys, $patch: delete)."""
  out = copy.deepcopy(base)
  for k, v in patch.items():
    if k in _MERGE_KEYS and isinstance(v, list):
      key, items = _MERGE_KEYS[k], list(out.get(k) or [])
      for p in v:
        at = [i for i, it in enumerate(items) if it.get(key) == p.get(key)]
        if p.get("$patch") == "delete":
          items = [it for i, it in enumerate(items) if i not in at]
        elif at:
          items[at[0]] = merge(items[at[0]], p)
        else:
          items.append(copy.deepcopy(p))
      out[k] = items
    elif isinstance(v, dict) and isinstance(out.get(k), dict):
      out[k] = merge(out[k], v)
    else:
      out[k] = copy.deepcopy(v)
  return out


def dra_objects():
  objs = [merge(BASE, load("overlays/dra/dra.yaml")[0])]
  for f in ("serviceaccount", "rbac", "admission-policy", "deviceclasses"):
    objs += load(f"overlays/dra/{f}.yaml")
  return objs


def both_objects():
  objs = dra_objects()
  objs[0] = merge(objs[0], load("overlays/dra-both/both.yaml")[0])
  find(objs, "DeviceClass", "gpu.nvidia.com")["spec"].pop(
      "extendedResourceName")
  with open(os.path.join(DEPLOY, "overlays/dra-both/config.yaml"),
            encoding="utf-8") as f:
    objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "gpu-device-plugin-config", "namespace": "kube-system"},
                 "data": {"config.yaml": f.read()}})
  return objs


def find(objs, kind, name=None):
  return next(o for o in objs if o["kind"] == kind and
              (name is None or o["metadata"]["name"] == name))


def dra_env(objs):
  return container(objs[0])["env"]


def set_env(objs, name, **entry):
  env = [e for e in dra_env(objs) if e["name"] != name]
  container(objs[0])["env"] = env + ([dict(name=name, **entry)] if entry
                                     else [])


def dra_mount(objs, path):
  return next(m for m in container(objs[0])["volumeMounts"]
              if m["mountPath"] == path)


def vap_spec(objs):
  return find(objs, "ValidatingAdmissionPolicy")["spec"]


def slice_rule(objs):
  return find(objs, "ClusterRole")["rules"][0]


DS = "DaemonSet kube-system/gpu-device-plugin: "
C0 = "spec.template.spec.containers[0]"
SA = "system:serviceaccount:kube-system:gpu-device-plugin-dra"
# (name, change to the dra overlay's objects, text a problem must hold)
DRA_CASES = [
    ("no NODE_NAME", lambda o: set_env(o, "NODE_NAME"),
     DS + C0 + ".env: NODE_NAME must come from the downward API"),
    ("fixed NODE_NAME", lambda o: set_env(o, "NODE_NAME", value="node-1"),
     C0 + ".env: NODE_NAME must come from the downward API"),
    ("fixed --node-name", lambda o: container(o[0])["args"].append(
        "--node-name=node-1"), C0 + ": --node-name=node-1: expected $(VAR)"),
    ("no DEVICE_API", lambda o: set_env(o, "DEVICE_API"),
     C0 + ": --device-api is 'device-plugin', expected 'dra'"),
    ("unknown DEVICE_API", lambda o: set_env(o, "DEVICE_API", value="gpu"),
     C0 + ": --device-api: 'gpu' is not one of"),
    ("no plugins mount", lambda o: container(o[0])["volumeMounts"].remove(
        dra_mount(o, "/var/lib/kubelet/plugins")),
     C0 + ".volumeMounts: nothing mounts the host's /var/lib/kubelet/plugins"
     " at /var/lib/kubelet/plugins"),
    ("registration dir read-only", lambda o: dra_mount(
        o, "/var/lib/kubelet/plugins_registry").update(readOnly=True),
     "volumeMounts[kubelet-plugins-registry]: /var/lib/kubelet/"
     "plugins_registry must be writable"),
    ("plugins dir elsewhere inside", lambda o: (
        dra_mount(o, "/var/lib/kubelet/plugins").update(mountPath="/plugins"),
        set_env(o, "KUBELET_PLUGINS_DIR", value="/plugins")),
     "volumeMounts[kubelet-plugins]: /plugins is the host's "
     "/var/lib/kubelet/plugins, expected /plugins"),
    ("NVIDIA's variable for the plugins dir", lambda o: set_env(
        o, "KUBELET_PLUGINS_DIRECTORY_PATH", value="/var/lib/k0s/plugins"),
     "nothing mounts the host's /var/lib/k0s/plugins at /var/lib/k0s/plugins"),
    ("CDI dir read-only", lambda o: dra_mount(o, "/var/run/cdi").update(
        readOnly=True), "volumeMounts[cdi]: /var/run/cdi must be writable"),
    ("device-plugins kept", lambda o: (
        container(o[0])["volumeMounts"].append(
            {"name": "dp", "mountPath": "/var/lib/kubelet/device-plugins"}),
        pod_spec(o[0])["volumes"].append(
            {"name": "dp", "hostPath": {
                "path": "/var/lib/kubelet/device-plugins"}})),
     "volumeMounts[dp]: mounts the kubelet's device-plugins directory"),
    ("socket path too long", lambda o: set_env(
        o, "DRA_DRIVER_NAME", value="a" * 60 + ".example.com"),
     "is longer than the 107 bytes a unix socket address holds"),
    ("no token", lambda o: pod_spec(o[0]).update(
        automountServiceAccountToken=False),
     "spec.template.spec.automountServiceAccountToken: false"),
    ("default ServiceAccount", lambda o: pod_spec(o[0]).pop(
        "serviceAccountName"), "spec.template.spec.serviceAccountName: None"),
    ("no ServiceAccount", lambda o: o.remove(find(o, "ServiceAccount")),
     "ServiceAccount kube-system/gpu-device-plugin-dra: not in the rendered"),
    ("ServiceAccount without token", lambda o: (
        find(o, "ServiceAccount").update(automountServiceAccountToken=False),
        pod_spec(o[0]).pop("automountServiceAccountToken")),
     "ServiceAccount kube-system/gpu-device-plugin-dra: "
     "automountServiceAccountToken is false"),
    ("binding to another namespace", lambda o: find(
        o, "ClusterRoleBinding")["subjects"][0].update(namespace="default"),
     "ServiceAccount kube-system/gpu-device-plugin-dra: no "
     "ClusterRoleBinding binds it"),
    ("binding to a missing role", lambda o: find(
        o, "ClusterRoleBinding")["roleRef"].update(name="other"),
     "ClusterRoleBinding gpu-device-plugin-dra: roleRef.name: ClusterRole "
     "'other' is not in the rendered output"),
    ("no watch", lambda o: slice_rule(o)["verbs"].remove("watch"),
     "ClusterRole gpu-device-plugin-dra: rules: missing watch on "
     "resource.k8s.io resourceslices"),
    ("deletecollection", lambda o: slice_rule(o)["verbs"].append(
        "deletecollection"), "rules: grants deletecollection on "
     "resource.k8s.io resourceslices, which the DRA side does not use"),
    ("wildcard", lambda o: slice_rule(o).update(verbs=["*"]),
     "ClusterRole gpu-device-plugin-dra: rules[0]: '*' grants more"),
    ("no nodes get", lambda o: find(o, "ClusterRole")["rules"].pop(2),
     "rules: missing get on core nodes"),
    ("policy for another user", lambda o: vap_spec(o)["matchConditions"][0]
     .update(expression="request.userInfo.username == 'x'"),
     f"ValidatingAdmissionPolicy: none matches {SA}"),
    ("policy without DELETE", lambda o: vap_spec(o)["matchConstraints"][
        "resourceRules"][0]["operations"].remove("DELETE"),
     "spec.matchConstraints.resourceRules: DELETE of resource.k8s.io "
     "resourceslices is not matched"),
    ("policy ignoring errors", lambda o: vap_spec(o).update(
        failurePolicy="Ignore"), "spec.failurePolicy: 'Ignore', expected Fail"),
    ("policy without oldObject", lambda o: vap_spec(o)["variables"][1].update(
        expression="has(object.spec.nodeName) ? object.spec.nodeName : ''"),
     "nothing reads oldObject.spec.nodeName (the stored slice's node"),
    ("policy without the token's node", lambda o: vap_spec(o)["variables"][
        0].update(expression="request.userInfo.username"),
     "nothing reads request.userInfo.extra['authentication.kubernetes.io/"
     "node-name']"),
    ("policy without message", lambda o: [vap_spec(o)["validations"][0].pop(k)
                                          for k in ("message",
                                                    "messageExpression")],
     "spec.validations[0]: no message or messageExpression"),
    ("policy unbound", lambda o: o.remove(
        find(o, "ValidatingAdmissionPolicyBinding")),
     "no ValidatingAdmissionPolicyBinding with spec.policyName naming it"),
    ("policy only warns", lambda o: find(
        o, "ValidatingAdmissionPolicyBinding")["spec"].update(
            validationActions=["Warn"]),
     "no ValidatingAdmissionPolicyBinding with spec.policyName naming it"),
    ("no MIG class", lambda o: o.remove(find(o, "DeviceClass",
                                             "mig.nvidia.com")),
     "DeviceClass mig.nvidia.com: not in the rendered output"),
    ("GPU class selects MIG", lambda o: find(
        o, "DeviceClass", "gpu.nvidia.com")["spec"]["selectors"][0]["cel"]
     .update(expression="device.driver == 'gpu.nvidia.com' && device."
             "attributes['gpu.nvidia.com'].type == 'mig'"),
     "DeviceClass gpu.nvidia.com: spec.selectors: no CEL expression with "
     "device.driver == 'gpu.nvidia.com' && "
     "device.attributes['gpu.nvidia.com'].type == 'gpu'"),
    ("another driver name", lambda o: set_env(o, "DRA_DRIVER_NAME",
                                              value="gpu.example.com"),
     "DeviceClass gpu.nvidia.com: spec.selectors: no CEL expression with "
     "device.driver == 'gpu.example.com'"),
    ("no extended resource", lambda o: find(
        o, "DeviceClass", "gpu.nvidia.com")["spec"].pop(
            "extendedResourceName"),
     "spec.extendedResourceName: None, expected nvidia.com/gpu"),
    ("empty CEL selector", lambda o: find(
        o, "DeviceClass", "mig.nvidia.com")["spec"]["selectors"][0]["cel"]
     .update(expression=" "), "spec.selectors[0].cel.expression: Required"),
]

# (name, change to the dra-both overlay's objects, text a problem must hold)
BOTH_CASES = [
    ("extended resource on both paths", lambda o: find(
        o, "DeviceClass", "gpu.nvidia.com")["spec"].update(
            extendedResourceName="nvidia.com/gpu"),
     "spec.extendedResourceName: nvidia.com/gpu is served by the device "
     "plugin on these nodes"),
    ("no device-plugins mount", lambda o: container(o[0])["volumeMounts"]
     .remove(dra_mount(o, "/var/lib/kubelet/device-plugins")),
     "nothing mounts the host's /var/lib/kubelet/device-plugins"),
    ("DEVICE_API overrides the file", lambda o: set_env(
        o, "DEVICE_API", value="dra"),
     "--device-api is 'dra', expected 'both'"),
    ("bad dra.devices", lambda o: find(o, "ConfigMap")["data"].update(
        {"config.yaml": "flags: {deviceAPI: both}\ndra: {devices: ['2', "
                        "'GPU-1']}\n"}),
     "ConfigMap kube-system/gpu-device-plugin-config.data.config.yaml: "
     "dra.devices[1]: 'GPU-1' is not a GPU index"),
    ("no dra section", lambda o: find(o, "ConfigMap")["data"].update(
        {"config.yaml": "flags: {deviceAPI: both}\n"}),
     "config.yaml: dra.devices: missing"),
    ("unknown deviceAPI", lambda o: find(o, "ConfigMap")["data"].update(
        {"config.yaml": "flags: {deviceAPI: all}\ndra: {devices: all}\n"}),
     "config.yaml: flags.deviceAPI: 'all' is not one of"),
]


class DraWiringTest(unittest.TestCase):

  def test_overlays_pass(self):
    self.assertEqual(validate_manifests.check_rendering("overlays/dra",
                                                        dra_objects()), [])
    self.assertEqual(validate_manifests.check_rendering("overlays/dra-both",
                                                        both_objects()), [])

  def test_each_break_is_named(self):
    for overlay, build, cases in (("overlays/dra", dra_objects, DRA_CASES),
                                  ("overlays/dra-both", both_objects,
                                   BOTH_CASES)):
      for name, change, want in cases:
        with self.subTest(name):
          objs = build()
          change(objs)
          problems = validate_manifests.check_rendering(overlay, objs)
          self.assertTrue(any(want in p for p in problems),
                          f"no problem holds {want!r}: {problems}")
          self.assertTrue(all(p.startswith(overlay + ": ")
                              for p in problems), problems)

  def test_node_name_flag_from_downward_api(self):
    objs = dra_objects()
    set_env(objs, "NODE_NAME")
    set_env(objs, "MY_NODE", valueFrom={"fieldRef": {
        "fieldPath": "spec.nodeName"}})
    container(objs[0])["args"].append("--node-name=$(MY_NODE)")
    self.assertEqual(validate_manifests.check_rendering("overlays/dra",
                                                        objs), [])

  def test_kubeconfig_needs_no_service_account(self):
    objs = [o for o in dra_objects() if o["kind"] not in (
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding")]
    pod_spec(objs[0]).pop("serviceAccountName")
    set_env(objs, "KUBECONFIG", value="/etc/kubernetes/kubelet.conf")
    container(objs[0])["volumeMounts"].append(
        {"name": "kubeconfig", "mountPath": "/etc/kubernetes/kubelet.conf"})
    pod_spec(objs[0])["volumes"].append(
        {"name": "kubeconfig", "hostPath": {
            "path": "/etc/kubernetes/kubelet.conf", "type": "File"}})
    self.assertEqual(validate_manifests.check_rendering("overlays/dra",
                                                        objs), [])

  def test_base_is_not_dra(self):
    problems = validate_manifests.check_rendering("overlays/dra", [BASE])
    self.assertTrue(any("--device-api is 'device-plugin', expected 'dra'" in p
                        for p in problems), problems)


if __name__ == "__main__":
  unittest.main()
