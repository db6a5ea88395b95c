#!/usr/bin/python3
"""The Helm charts under deploy/helm/, linted, rendered and checked.

  helm_charts.py --deploy-dir deploy --helm helm --kubectl kubectl-1.34

1. `helm lint` of each chart.
2. One source of truth: each chart's defaults (and the values that stand
   for an overlay, DRIFT below) must render the same objects as the
   kustomize overlay (`kubectl kustomize`), after normalize(): Helm's own
   labels and the config checksum annotation dropped, kustomize's hash
   suffixes dropped, lists whose order means nothing sorted, config files in
   ConfigMaps compared parsed. The overlays stay what the docs and the
   runtime tests use; the charts are checked against them, not generated.
3. NVIDIA's values, one case each (CASES): the rendering passes every check
   the overlays get (validate_manifests.check_rendering: the API schema and
   server rules, the DaemonSet's hardening and host mounts, the DRA wiring),
   and the value's effect on the flags, environment, mounts and fields is the
   one expected. REFUSED: values the charts do not honour fail
   `helm template`, naming the value.
4. The DRA chart's table of NVIDIA's feature gates
   (nvidia-feature-gates.yaml, which validation.yaml refuses gates by) is
   the plugin's (src/config/feature_gates.cc).
Exits 1 naming the case and what differed.
"""

import argparse
import concurrent.futures
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import validate_manifests
from manifest_util import mount_of, setting
# pylint: enable=wrong-import-position

DP = "gpu-device-plugin"
DRA = "gpu-device-plugin-dra"
NAMESPACE = "kube-system"
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/instance",
               "app.kubernetes.io/version", "app.kubernetes.io/managed-by")
HELM_ANNOTATIONS = ("checksum/config",)


def _overlay_file(deploy_dir, path):
  with open(os.path.join(deploy_dir, path), encoding="utf-8") as f:
    return f.read()


def drift_pairs(deploy_dir):
  """(chart, values, overlay): the chart with values renders the overlay."""
  ts = _overlay_file(deploy_dir, "overlays/time-slicing/config.yaml")
  both = yaml.safe_load(_overlay_file(deploy_dir,
                                      "overlays/dra-both/config.yaml"))
  return [
      (DP, {}, "base"),
      (DP, {"compatWithCPUManager": True}, "overlays/cpu-manager"),
      (DP, {"gfd": {"enabled": True}}, "overlays/labels"),
      (DP, {"gfd": {"enabled": True, "useNodeFeatureAPI": True}},
       "overlays/labels-nodefeature"),
      (DP, {"config": {"map": {"default": ts}}}, "overlays/time-slicing"),
      (DRA, {}, "overlays/dra"),
      (DRA, {"both": {"enabled": True, "devices": both["dra"]["devices"]}},
       "overlays/dra-both"),
  ]


# Every value of NVIDIA's charts' values.yaml at its default (NVIDIA's
# nvidia-device-plugin 0.20 and the DRA driver's main branch, August 2026),
# with only what a migration must change: the image, and for the DRA driver
# compute domains off. These must install; what they render is in CASES.
NVIDIA_DP_DEFAULTS = {
    "config": {"name": "", "map": {}, "default": "",
               "fallbackStrategies": ["named", "single"]},
    "compatWithCPUManager": None, "migStrategy": None,
    "failOnInitError": None, "deviceListStrategy": None,
    "deviceIDStrategy": None, "nvidiaDriverRoot": None,
    "gdrcopyEnabled": None, "gdsEnabled": None, "mofedEnabled": None,
    "deviceDiscoveryStrategy": None,
    "nameOverride": "", "fullnameOverride": "", "namespaceOverride": "",
    "selectorLabelsOverride": {}, "allowDefaultNamespace": False,
    "imagePullSecrets": [],
    "image": {"repository": "registry.example.com/gpu-device-plugin",
              "pullPolicy": "IfNotPresent", "tag": ""},
    "updateStrategy": {"type": "RollingUpdate"},
    "podAnnotations": {}, "podSecurityContext": {}, "securityContext": {},
    "resources": {}, "nodeSelector": {},
    "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{
                    "key": "feature.node.kubernetes.io/pci-10de.present",
                    "operator": "In", "values": ["true"]}]},
                {"matchExpressions": [{
                    "key": "feature.node.kubernetes.io/cpu-model.vendor_id",
                    "operator": "In", "values": ["NVIDIA"]}]},
                {"matchExpressions": [{
                    "key": "nvidia.com/gpu.present", "operator": "In",
                    "values": ["true"]}]}]}}},
    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                    {"key": "nvidia.com/gpu", "operator": "Exists",
                     "effect": "NoSchedule"}],
    "priorityClassName": "system-node-critical", "runtimeClassName": None,
    "devicePlugin": {"enabled": True},
    "gfd": {"enabled": False, "nameOverride": "gpu-feature-discovery",
            "namespaceOverride": "", "noTimestamp": None,
            "sleepInterval": None, "securityContext": {"privileged": True}},
    "nfd": {"nameOverride": "node-feature-discovery",
            "master": {"serviceAccount": {"name": "node-feature-discovery",
                                          "create": True},
                       "config": {"extraLabelNs": ["nvidia.com"]}},
            "worker": {"tolerations": [], "config": {"sources": {
                "pci": {"deviceClassWhitelist": ["02", "03"],
                        "deviceLabelFields": ["vendor"]}}}}},
    "mps": {"root": "/run/nvidia/mps", "enableHostPID": True},
    "cdi": {"nvidiaHookPath": None, "featureFlags": None},
}
NVIDIA_DRA_DEFAULTS = {
    "nvidiaDriverRoot": "/", "nvidiaCDIHookPath": "", "altProcDevices": "",
    "nameOverride": "", "fullnameOverride": "", "namespaceOverride": "",
    "selectorLabelsOverride": {}, "gpuResourcesEnabledOverride": False,
    "consumableShares": "", "allowDefaultNamespace": False,
    "resourceApiVersion": "", "imagePullSecrets": [],
    "image": {"repository": "registry.example.com/gpu-device-plugin",
              "pullPolicy": "IfNotPresent", "tag": ""},
    "serviceAccount": {"create": True, "annotations": {}, "name": ""},
    "resources": {"gpus": {"enabled": True},
                  "computeDomains": {"enabled": False, "imex": {
                      "mode": "driverManaged", "isolation": "domain",
                      "hostSocketPath": "/etc/nvidia-imex/imex_ctrl.sock"}}},
    "featureGates": {}, "logVerbosity": "4",
    "webhook": {"enabled": False, "replicas": 1, "servicePort": 443,
                "tls": {"mode": "cert-manager"}},
    "controller": {"replicas": 1, "metrics": {"enabled": True}},
    "kubeletPlugin": {
        "metrics": {"enabled": True, "gpuHttpEndpoint": ":8080",
                    "computeDomainHttpEndpoint": ":8081",
                    "metricsPath": "/metrics"},
        "priorityClassName": "system-node-critical",
        "updateStrategy": {"type": "RollingUpdate",
                           "rollingUpdate": {"maxUnavailable": "100%"}},
        "podAnnotations": {}, "podSecurityContext": {}, "nodeSelector": {},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                         "effect": "NoSchedule"}],
        "kubeletRegistrarDirectoryPath": "/var/lib/kubelet/plugins_registry",
        "kubeletPluginsDirectoryPath": "/var/lib/kubelet/plugins",
        "containers": {
            "init": {"securityContext": {}, "resources": {}},
            "computeDomains": {"env": [], "securityContext":
                               {"privileged": True}, "resources": {},
                               "healthcheckPort": 51515,
                               "gpuCliqueLabelEnabled": False},
            "gpus": {"env": [], "securityContext": {"privileged": True},
                     "resources": {}, "healthcheckPort": 51516}},
        "networkPolicy": {"enabled": False}},
}

# The values table: (chart, NVIDIA's values, expect for check_rendering,
# effects). An effect is (what, key, value): ("env", NAME, value or None for
# absent), ("mount", container path, host path or None for absent),
# ("field", dotted path in the DaemonSet, value), ("object", kind/name,
# True or False for present). Values not in NVIDIA's chart are ours.
CASES = [
    (DP, {}, {}, [("env", "MIG_STRATEGY", None),
                  ("env", "CONFIG_FILE", None)]),
    (DP, {"migStrategy": "mixed"}, {},
     [("env", "MIG_STRATEGY", "mixed"),
      ("env", "NVIDIA_MIG_MONITOR_DEVICES", "all"),
      ("field", "securityContext.capabilities.add", ["SYS_ADMIN"])]),
    (DP, {"migStrategy": "none"}, {},
     [("env", "MIG_STRATEGY", "none"),
      ("env", "NVIDIA_MIG_MONITOR_DEVICES", None)]),
    (DP, {"failOnInitError": False}, {},
     [("env", "FAIL_ON_INIT_ERROR", "false")]),
    (DP, {"compatWithCPUManager": True},
     {"privileged": True, "pass_device_specs": True},
     [("env", "PASS_DEVICE_SPECS", "true"),
      ("field", "securityContext.privileged", True)]),
    (DP, {"deviceListStrategy": "envvar,cdi-cri"}, {},
     [("env", "DEVICE_LIST_STRATEGY", "envvar,cdi-cri")]),
    (DP, {"deviceIDStrategy": "index"}, {},
     [("env", "DEVICE_ID_STRATEGY", "index")]),
    (DP, {"nvidiaDriverRoot": "/run/nvidia/driver",
          "nvidiaDevRoot": "/"}, {},
     [("env", "NVIDIA_DRIVER_ROOT", "/run/nvidia/driver"),
      ("env", "NVIDIA_DEV_ROOT", "/"),
      ("mount", "/driver-root", "/run/nvidia/driver"),
      ("mount", "/run/nvidia/driver", "/run/nvidia/driver")]),
    (DP, {"deviceDiscoveryStrategy": "nvml"}, {}, []),
    (DP, {"config": {"map": {"default": "version: v1\nflags:\n"
                                        "  migStrategy: single\n",
                             "ts": "version: v1\nsharing:\n  timeSlicing:\n"
                                   "    resources:\n"
                                   "    - {name: nvidia.com/gpu, "
                                   "replicas: 2}\n"}}},
     {"config_file": "any"},
     # The named fallback: the entry "default".
     [("env", "CONFIG_FILE", "/etc/gpu-device-plugin/config.yaml"),
      ("env", "NVIDIA_MIG_MONITOR_DEVICES", "all"),
      ("object", "ConfigMap/gpu-device-plugin-config", True),
      ("field", "spec.template.metadata.annotations.checksum/config", str)]),
    (DP, {"config": {"map": {"a": "version: v1\n",
                             "ts": "version: v1\nsharing:\n  mps:\n"
                                   "    resources:\n"
                                   "    - {name: nvidia.com/gpu, "
                                   "replicas: 2}\n"},
                     "default": "ts"}},
     {"config_file": "mps"},
     [("env", "MPS_ROOT", "/run/nvidia/mps"),
      ("mount", "/run/nvidia/mps", "/run/nvidia/mps")]),
    (DP, {"config": {"map": {"only": "version: v1\n"},
                     "fallbackStrategies": ["single"]}}, {"config_file": "any"},
     [("env", "CONFIG_FILE", "/etc/gpu-device-plugin/config.yaml")]),
    (DP, {"config": {"name": "my-configs", "default": "a100"}},
     {"config_file": "any",
      "extra": [{"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "my-configs", "namespace": NAMESPACE},
                 "data": {"a100": "version: v1\n"}}]},
     [("env", "CONFIG_FILE", "/etc/gpu-device-plugin/config.yaml"),
      ("field", "spec.template.spec.volumes[config].configMap.items",
       [{"key": "a100", "path": "config.yaml"}]),
      # The config may ask for MIG, as NVIDIA's chart assumes.
      ("env", "NVIDIA_MIG_MONITOR_DEVICES", "all"),
      ("object", "ConfigMap/gpu-device-plugin-config", False)]),
    (DP, {"gfd": {"enabled": True, "noTimestamp": True,
                  "sleepInterval": "30s"}}, {"labels": True},
     [("env", "GDP_LABELS", "true"), ("env", "GFD_NO_TIMESTAMP", "true"),
      ("env", "GFD_SLEEP_INTERVAL", "30s"),
      ("mount", "/host/dmi/product_name", "/sys/class/dmi/id/product_name")]),
    # Ours: the labels as NodeFeature objects, with their RBAC; without
    # gfd.enabled nothing of it.
    (DP, {"gfd": {"enabled": True, "useNodeFeatureAPI": True}},
     {"labels": True},
     [("env", "USE_NODE_FEATURE_API", "true"),
      ("field", "spec.template.spec.serviceAccountName",
       "gpu-device-plugin-labels"),
      ("field", "spec.template.spec.automountServiceAccountToken", True),
      ("object", "ServiceAccount/gpu-device-plugin-labels", True),
      ("object", "ClusterRole/gpu-device-plugin-labels", True),
      ("object", "ClusterRoleBinding/gpu-device-plugin-labels", True)]),
    (DP, {"gfd": {"useNodeFeatureAPI": True}}, {},
     [("env", "USE_NODE_FEATURE_API", None),
      ("field", "spec.template.spec.automountServiceAccountToken", False),
      ("object", "ClusterRole/gpu-device-plugin-labels", False)]),
    (DP, {"devicePlugin": {"enabled": False}}, None,
     [("object", "DaemonSet/gpu-device-plugin", False)]),
    (DP, {"devicePlugin": {"enableHostNetwork": True}}, {},
     [("field", "spec.template.spec.hostNetwork", True),
      ("field", "spec.template.spec.dnsPolicy", "ClusterFirstWithHostNet")]),
    (DP, {"runtimeClassName": "nvidia", "priorityClassName": "gpu-critical",
          "imagePullSecrets": [{"name": "reg"}],
          "nodeSelector": {"gpu": "yes"},
          "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                           "effect": "NoSchedule"},
                          {"key": "CriticalAddonsOnly", "operator": "Exists"}],
          "podAnnotations": {"team": "ml"},
          "podSecurityContext": {"runAsUser": 0}},
     "skip-priority",
     [("field", "spec.template.spec.runtimeClassName", "nvidia"),
      ("field", "spec.template.spec.priorityClassName", "gpu-critical"),
      ("field", "spec.template.spec.imagePullSecrets", [{"name": "reg"}]),
      ("field", "spec.template.spec.nodeSelector", {"gpu": "yes"}),
      ("field", "spec.template.metadata.annotations.team", "ml"),
      ("field", "spec.template.spec.securityContext.runAsUser", 0)]),
    (DP, {"image": {"repository": "registry.example.com/gdp", "tag": "1.2",
                    "pullPolicy": "Always"},
          "resources": {"limits": {"memory": "512Mi"}}}, {},
     [("field", "image", "registry.example.com/gdp:1.2"),
      ("field", "imagePullPolicy", "Always"),
      ("field", "resources.limits.memory", "512Mi"),
      ("field", "resources.requests.cpu", "50m")]),
    (DP, {"securityContext": {"allowPrivilegeEscalation": False,
                              "readOnlyRootFilesystem": True,
                              "capabilities": {"drop": ["ALL"]},
                              "seccompProfile": {"type": "RuntimeDefault"},
                              "runAsUser": 0}}, {},
     [("field", "securityContext.runAsUser", 0)]),
    (DP, {"affinity": None}, {}, [("field", "spec.template.spec.affinity",
                                 None)]),
    (DP, {"updateStrategy": {"type": "RollingUpdate",
                             "rollingUpdate": {"maxUnavailable": "20%"}}},
     {}, [("field", "spec.updateStrategy.rollingUpdate.maxUnavailable",
           "20%")]),
    (DP, {"fullnameOverride": "nvdp", "selectorLabelsOverride":
          {"app": "nvdp"}}, "skip-name",
     [("field", "metadata.name", "nvdp"),
      ("field", "spec.selector.matchLabels", {"app": "nvdp"})]),
    (DP, {"namespaceOverride": "gpu-system"}, "skip-namespace",
     [("field", "metadata.namespace", "gpu-system")]),
    (DP, {"allowDefaultNamespace": True, "namespaceOverride": "default"},
     "skip-namespace", [("field", "metadata.namespace", "default")]),
    # NVIDIA's CDI hook path: NVIDIA_CDI_HOOK_PATH when a string, as in
    # NVIDIA's chart; null: absent.
    (DP, {"cdi": {"nvidiaHookPath": "/usr/local/nvidia/toolkit/nvidia-ctk"}},
     {}, [("env", "NVIDIA_CDI_HOOK_PATH",
           "/usr/local/nvidia/toolkit/nvidia-ctk")]),
    (DP, {"cdi": {"nvidiaHookPath": None}}, {},
     [("env", "NVIDIA_CDI_HOOK_PATH", None)]),
    # NVIDIA's values at NVIDIA's defaults for what is not supported.
    (DP, {"gdrcopyEnabled": False, "gdsEnabled": None, "mofedEnabled": False,
          "cdi": {"nvidiaHookPath": None, "featureFlags": None},
          "mps": {"root": "/run/nvidia/mps", "enableHostPID": True},
          "nfd": {"nameOverride": "node-feature-discovery",
                  "master": {"config": {"extraLabelNs": ["nvidia.com"]}}},
          "gfd": {"nameOverride": "gpu-feature-discovery",
                  "securityContext": {"privileged": True}}}, {},
     [("env", "MPS_ROOT", None)]),
    # Ours.
    (DP, {"health": {"disableHealthchecks": "48", "nvmlTimeout": "5s",
                     "nvlinkDownUnhealthy": True, "stateDir": ""},
          "sharing": {"sharedDevicesAllocationPolicy": "packed"},
          "rediscoverInterval": "0", "logVerbosity": 1,
          "memoryLimitHook": {"kind": "gdp"},
          "metrics": {"port": 9445}}, {},
     [("env", "DP_DISABLE_HEALTHCHECKS", "48"), ("env", "NVML_TIMEOUT", "5s"),
      ("env", "NVLINK_DOWN_UNHEALTHY", "true"), ("env", "STATE_DIR", ""),
      ("env", "SHARED_DEVICES_ALLOCATION_POLICY", "packed"),
      ("env", "REDISCOVER_INTERVAL", "0"), ("env", "LOG_VERBOSITY", "1"),
      ("env", "MEMORY_LIMIT_HOOK", "gdp"),
      ("mount", "/var/lib/gpu-device-plugin", None)]),
    (DP, {"kubeletDevicePluginsDir": "/var/lib/k0s/kubelet/device-plugins"},
     "skip-host-paths",
     [("mount", "/var/lib/kubelet/device-plugins",
       "/var/lib/k0s/kubelet/device-plugins")]),
    (DP, NVIDIA_DP_DEFAULTS, {},
     [("field", "image", "registry.example.com/gpu-device-plugin:0.1.0"),
      ("field", "resources.limits.memory", "256Mi"),
      ("field", "spec.template.spec.tolerations",
       NVIDIA_DP_DEFAULTS["tolerations"]),
      ("env", "MPS_ROOT", None)]),
    # The DRA chart.
    # NVIDIA's defaults run the plugin privileged with metrics on :8080;
    # docs/deploy.md says to drop both from a values file.
    (DRA, NVIDIA_DRA_DEFAULTS, "skip-nvidia-dra-defaults",
     [("env", "LOG_VERBOSITY", "4"),
      ("field", "args", ["--metrics-address=:8080"]),
      ("field", "securityContext", {"privileged": True})]),
    # The DRA chart.
    (DRA, {}, {"device_api": "dra"},
     [("env", "DEVICE_API", "dra"), ("env", "FEATURE_GATES", None),
      ("object", "DeviceClass/gpu.nvidia.com", True),
      ("object", "ValidatingAdmissionPolicy/"
                 "gpu-device-plugin-dra-resourceslices", True)]),
    (DRA, {"featureGates": {"ConsumableShares": True,
                            "NVMLDeviceHealthCheck": False},
           "consumableShares": "memory", "logVerbosity": "4"},
     {"device_api": "dra"},
     [("env", "FEATURE_GATES",
       "ConsumableShares=true,NVMLDeviceHealthCheck=false"),
      ("env", "CONSUMABLE_SHARES", "memory"), ("env", "LOG_VERBOSITY", "4")]),
    (DRA, {"featureGates": {"DynamicMIG": True}}, {"device_api": "dra"},
     [("env", "FEATURE_GATES", "DynamicMIG=true")]),
    (DRA, {"nvidiaDriverRoot": "/run/nvidia/driver"}, {"device_api": "dra"},
     [("env", "NVIDIA_DRIVER_ROOT", "/run/nvidia/driver"),
      ("mount", "/driver-root", "/run/nvidia/driver"),
      ("mount", "/run/nvidia/driver", "/run/nvidia/driver")]),
    (DRA, {"kubeletPlugin": {
        "kubeletRegistrarDirectoryPath":
            "/var/lib/k0s/kubelet/plugins_registry",
        "kubeletPluginsDirectoryPath": "/var/lib/k0s/kubelet/plugins"}},
     "skip-dra-dirs",
     [("env", "KUBELET_REGISTRATION_DIR",
       "/var/lib/k0s/kubelet/plugins_registry"),
      ("env", "KUBELET_PLUGINS_DIR", "/var/lib/k0s/kubelet/plugins"),
      ("mount", "/var/lib/k0s/kubelet/plugins",
       "/var/lib/k0s/kubelet/plugins")]),
    (DRA, {"kubeletPlugin": {
        "priorityClassName": "system-node-critical",
        "podAnnotations": {"a": "b"},
        "nodeSelector": {"gpu": "yes"},
        "metrics": {"gpuHttpEndpoint": ":9445"},
        "updateStrategy": {"type": "RollingUpdate",
                           "rollingUpdate": {"maxUnavailable": "100%"}},
        "containers": {"gpus": {"env": [{"name": "EXTRA", "value": "1"}],
                                "resources": {"limits": {"memory": "1Gi"}}}}}},
     {"device_api": "dra"},
     [("env", "EXTRA", "1"), ("field", "resources.limits.memory", "1Gi"),
      ("field", "spec.template.metadata.annotations.a", "b"),
      ("field", "spec.template.spec.nodeSelector", {"gpu": "yes"}),
      ("field", "spec.updateStrategy.rollingUpdate.maxUnavailable", "100%")]),
    (DRA, {"kubeletPlugin": {"containers": {"init": {
        "resources": {"limits": {"memory": "128Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]},
                            "runAsUser": 0}}}},
      "memoryLimitHook": {"kind": "nvidia",
                          "path": "/usr/bin/nvidia-cdi-hook"}},
     {"device_api": "dra"},
     [("field", "spec.template.spec.initContainers[install-cdi-hook]"
                ".resources", {"limits": {"memory": "128Mi"}}),
      ("field", "spec.template.spec.initContainers[install-cdi-hook]"
                ".securityContext.runAsUser", 0),
      ("env", "MEMORY_LIMIT_HOOK", "nvidia"),
      ("env", "MEMORY_LIMIT_HOOK_PATH", "/usr/bin/nvidia-cdi-hook")]),
    # NVIDIA's CDI hook path: NVIDIA_CDI_HOOK_PATH when set, as in NVIDIA's
    # chart; "": absent.
    (DRA, {"nvidiaCDIHookPath": "/usr/bin/nvidia-cdi-hook"},
     {"device_api": "dra"},
     [("env", "NVIDIA_CDI_HOOK_PATH", "/usr/bin/nvidia-cdi-hook")]),
    (DRA, {"nvidiaCDIHookPath": ""}, {"device_api": "dra"},
     [("env", "NVIDIA_CDI_HOOK_PATH", None)]),
    (DRA, {"serviceAccount": {"name": "gpu-dra", "annotations": {"x": "y"}}},
     {"device_api": "dra"},
     [("field", "spec.template.spec.serviceAccountName", "gpu-dra"),
      ("object", "ServiceAccount/gpu-dra", True)]),
    (DRA, {"both": {"enabled": True, "devices": ["0", "1:0"]}},
     {"device_api": "both", "config_file": "dra"},
     [("env", "DEVICE_API", None),
      ("mount", "/var/lib/kubelet/device-plugins",
       "/var/lib/kubelet/device-plugins")]),
    # NVIDIA's values at NVIDIA's defaults for what is not supported.
    (DRA, {"nvidiaCDIHookPath": "", "altProcDevices": "",
           "gpuResourcesEnabledOverride": True, "resourceApiVersion": "",
           "resources": {"gpus": {"enabled": True},
                         "computeDomains": {"enabled": False,
                                            "imex": {"mode": "driverManaged"}}},
           "webhook": {"enabled": False, "replicas": 1},
           "controller": {"replicas": 1},
           "kubeletPlugin": {"metrics": {"enabled": True,
                                         "metricsPath": "/metrics",
                                         "computeDomainHttpEndpoint": ":8081"},
                             "networkPolicy": {"enabled": False},
                             "containers": {"gpus": {"healthcheckPort": 51516},
                                            "computeDomains": {"env": []},
                                            "init": {"resources": {}}}}},
     {"device_api": "dra"}, []),
]

# Values refused: (chart, values, text the error must contain).
REFUSED = [
    (DP, {"gdsEnabled": True}, "gdsEnabled"),
    (DP, {"gdrcopyEnabled": True}, "gdrcopyEnabled"),
    (DP, {"mofedEnabled": True}, "mofedEnabled"),
    (DP, {"cdi": {"nvidiaHookPath": "usr/bin/nvidia-ctk"}},
     "/cdi/nvidiaHookPath"),
    (DP, {"cdi": {"featureFlags": "x"}}, "cdi.featureFlags"),
    (DP, {"deviceDiscoveryStrategy": "tegra"}, "deviceDiscoveryStrategy"),
    (DP, {"nfd": {"enabled": True}}, "nfd.enabled"),
    (DP, {"gfd": {"nameOverride": "gfd"}}, "gfd.nameOverride"),
    (DP, {"gfd": {"namespaceOverride": "x"}}, "gfd.namespaceOverride"),
    (DP, {"gfd": {"securityContext": {"privileged": False}}},
     "gfd.securityContext"),
    (DP, {"gfd": {"enableHostNetwork": True}}, "gfd.enableHostNetwork"),
    (DP, {"gfd": {"enabled": True}, "devicePlugin": {"enabled": False}},
     "devicePlugin.enabled"),
    (DP, {"mps": {"enableHostPID": False}}, "mps.enableHostPID"),
    (DP, {"image": {"repository": "nvcr.io/nvidia/k8s-device-plugin"}},
     "image.repository"),
    (DP, {"namespace": "gpu"}, "namespace"),
    (DP, {"migStrategy": "all"}, "/migStrategy"),
    (DP, {"deviceListStrategy": "nvlink"}, "/deviceListStrategy"),
    (DP, {"nvidiaDriverRoot": "run/nvidia"}, "/nvidiaDriverRoot"),
    (DP, {"unknownValue": 1}, "unknownValue"),
    (DP, {"config": {"name": "a", "map": {"b": "version: v1"}}},
     "config.name and config.map"),
    (DP, {"config": {"map": {"a": "version: v1", "b": "version: v1"}}},
     "config.map: no config selected"),
    (DP, {"config": {"map": {"a": "version: v1"}, "default": "b"}},
     "config.default"),
    (DP, {"config": {"name": "cm", "fallbackStrategies": ["single"]}},
     "config.name"),
    (DRA, {"resources": {"computeDomains": {"enabled": True}}},
     "resources.computeDomains.enabled"),
    (DRA, {"resources": {"gpus": {"enabled": False}}},
     "resources.gpus.enabled"),
    (DRA, {"webhook": {"enabled": True}}, "webhook.enabled"),
    (DRA, {"nvidiaCDIHookPath": "/usr/bin/"}, "/nvidiaCDIHookPath"),
    (DRA, {"altProcDevices": "/proc/devices"}, "altProcDevices"),
    (DRA, {"maskNvidiaDriverParams": True}, "maskNvidiaDriverParams"),
    (DRA, {"nvidiaCtkPath": "/usr/bin/nvidia-ctk"}, "nvidiaCtkPath"),
    (DRA, {"resourceApiVersion": "resource.k8s.io/v1beta1"},
     "resourceApiVersion"),
    (DRA, {"kubeletPlugin": {"metrics": {"enabled": False}}},
     "kubeletPlugin.metrics.enabled"),
    (DRA, {"kubeletPlugin": {"metrics": {"metricsPath": "/m"}}},
     "kubeletPlugin.metrics.metricsPath"),
    (DRA, {"kubeletPlugin": {"networkPolicy": {"enabled": True}}},
     "kubeletPlugin.networkPolicy.enabled"),
    (DRA, {"kubeletPlugin": {"containers": {"gpus": {"healthcheckPort": 1}}}},
     "kubeletPlugin.containers.gpus.healthcheckPort"),
    (DRA, {"memoryLimitHook": {"kind": "toolkit"}}, "/memoryLimitHook/kind"),
    (DRA, {"image": {"repository": "registry.k8s.io/dra-driver-nvidia/"
                                   "dra-driver-nvidia-gpu"}},
     "image.repository"),
    (DRA, {"both": {"enabled": True}}, "both.devices"),
    (DRA, {"featureGates": {"ConsumableShares": "yes"}}, "/featureGates"),
    (DRA, {"featureGates": {"DynamicMIG": True, "MPSSupport": True}},
     "featureGates.DynamicMIG"),
    (DRA, {"consumableShares": "1"}, "consumableShares"),
    (DRA, {"consumableShares": "half"}, "/consumableShares"),
    (DRA, {"featureGates": {"NoSuchGate": True}}, "featureGates.NoSuchGate"),
    (DRA, {"featureGates": {"AllAlpha": True}}, "featureGates.AllAlpha"),
    (DRA, {"unknownValue": 1}, "unknownValue"),
]


_SUPPORT = {"kImplemented": "implemented", "kDefaultOnly": "default-only",
            "kNoEffect": "no-effect"}


def check_gate_table(deploy_dir):
  """The DRA chart's gate table is the plugin's (feature_gates.cc)."""
  cc = os.path.join(deploy_dir, "..", "src", "config", "feature_gates.cc")
  table = os.path.join(deploy_dir, "helm", DRA, "nvidia-feature-gates.yaml")
  with open(cc, encoding="utf-8") as f:
    src = f.read()
  consts = dict(re.findall(r'constexpr absl::string_view (k\w+) =\s*"([^"]*)"',
                           src))
  body = src[src.index("NvidiaFeatureGates() {"):]
  want = {}
  for name, default, support in re.findall(
      r'\{\s*(k\w+|"[A-Za-z]+")\s*,\s*(true|false)\s*,\s*'
      r'GateSupport::(k\w+)', body):
    want[consts.get(name, name.strip('"'))] = {
        "default": default == "true", "support": _SUPPORT.get(support,
                                                              support)}
  with open(table, encoding="utf-8") as f:
    got = yaml.safe_load(f)
  if not want:
    return [f"{cc}: no gates found in NvidiaFeatureGates()"]
  if got != want:
    return [f"{table}: {first_difference(got, want)} (chart vs "
            "feature_gates.cc; 'overlay' is the plugin's table)"]
  return []


def run(cmd, stdin=None):
  proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True,
                        check=False, timeout=120)
  return proc.returncode, proc.stdout, proc.stderr


class Tools:
  """helm and kubectl, and the deploy directory."""

  def __init__(self, helm, kubectl, deploy_dir):
    self.helm, self.kubectl, self.deploy_dir = helm, kubectl, deploy_dir

  def chart(self, name):
    return os.path.join(self.deploy_dir, "helm", name)

  def template(self, chart, values):
    """(objects, error text): `helm template` of chart with values."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
      json.dump(values, f)
      f.flush()
      rc, out, err = run([self.helm, "template", chart, self.chart(chart),
                          "--namespace", NAMESPACE, "--values", f.name])
    if rc != 0:
      return None, err.strip() or f"exit {rc}"
    return [d for d in yaml.safe_load_all(out) if d is not None], None

  def kustomize(self, overlay):
    objects, problems = validate_manifests.render(
        self.kubectl, os.path.join(self.deploy_dir, overlay))
    return objects, "; ".join(problems) if problems else None


def _strip(mapping, keys):
  for k in keys:
    (mapping or {}).pop(k, None)


def _sort(items, key):
  if isinstance(items, list):
    items.sort(key=lambda i: json.dumps([i.get(k) for k in key]))


def normalize(objects):
  """objects as compared between a chart and an overlay (module docstring)."""
  objects = validate_manifests.normalized(copy.deepcopy(objects))
  for o in objects:
    meta = o.get("metadata") or {}
    _strip(meta.get("labels"), HELM_LABELS)
    if meta.get("labels") == {}:
      del meta["labels"]
    if o.get("kind") == "ConfigMap":
      o["data"] = {k: yaml.safe_load(v) for k, v in
                   (o.get("data") or {}).items()}
    spec = o.get("spec") or {}
    if "template" in spec:
      _strip((spec.get("selector") or {}).get("matchLabels"), HELM_LABELS)
      tmeta = spec["template"].get("metadata") or {}
      _strip(tmeta.get("labels"), HELM_LABELS)
      _strip(tmeta.get("annotations"), HELM_ANNOTATIONS)
      pod = spec["template"]["spec"]
      _sort(pod.get("volumes"), ("name",))
      for c in pod.get("containers", []) + pod.get("initContainers", []):
        _sort(c.get("env"), ("name",))
        _sort(c.get("volumeMounts"), ("name", "mountPath"))
  objects.sort(key=lambda o: (o.get("kind"), o["metadata"].get("namespace",
                                                                ""),
                              o["metadata"]["name"]))
  return objects


def first_difference(a, b, path=""):
  """The first path where a and b differ, with both values; None if equal."""
  if isinstance(a, dict) and isinstance(b, dict):
    for k in sorted(set(a) | set(b), key=str):
      if k not in a or k not in b:
        return f"{path}.{k}: {a.get(k)!r} (chart) vs {b.get(k)!r} (overlay)"
      d = first_difference(a[k], b[k], f"{path}.{k}")
      if d:
        return d
    return None
  if isinstance(a, list) and isinstance(b, list):
    names = lambda items: [i.get("name") for i in items
                           if isinstance(i, dict)]
    if names(a) != names(b) and all(names(a) + names(b)):
      only_a = sorted(set(names(a)) - set(names(b)))
      only_b = sorted(set(names(b)) - set(names(a)))
      if only_a or only_b:
        return (f"{path}: only in the chart: {only_a}, only in the overlay: "
                f"{only_b}")
    for i, (x, y) in enumerate(zip(a, b)):
      name = x.get("name") if isinstance(x, dict) else None
      d = first_difference(x, y, f"{path}[{name or i}]")
      if d:
        return d
    if len(a) != len(b):
      return f"{path}: {len(a)} item(s) (chart) vs {len(b)} (overlay)"
    return None
  return None if a == b else f"{path}: {a!r} (chart) vs {b!r} (overlay)"


def check_drift(tools, chart, values, overlay):
  label = f"{chart} {json.dumps(values)[:60]} vs {overlay}"
  rendered, err = tools.template(chart, values)
  if err:
    return [f"{label}: helm template failed: {err}"]
  kustomized, err = tools.kustomize(overlay)
  if err:
    return [f"{label}: {err}"]
  a, b = normalize(rendered), normalize(kustomized)
  ids = lambda objs: [f"{o['kind']}/{o['metadata']['name']}" for o in objs]
  if ids(a) != ids(b):
    return [f"{label}: objects differ: {ids(a)} (chart) vs {ids(b)} "
            "(overlay)"]
  problems = []
  for x, y in zip(a, b):
    d = first_difference(x, y)
    if d:
      problems.append(f"{label}: {x['kind']}/{x['metadata']['name']}{d}")
  return problems


def _get(obj, dotted):
  """obj's value at a dotted path; [name] picks a list item by name."""
  cur = obj
  for part in re.findall(r"[^.\[\]]+/[^.\[\]]+|[^.\[\]]+|\[[^\]]+\]", dotted):
    if part.startswith("["):
      name = part[1:-1]
      if name.isdigit():
        cur = cur[int(name)] if isinstance(cur, list) and int(name) < len(
            cur) else None
      else:
        cur = next((i for i in cur or [] if i.get("name") == name), None)
    elif isinstance(cur, dict):
      cur = cur.get(part)
    else:
      return None
  return cur


def check_effect(objects, effect):
  """A problem string when effect does not hold in objects, else None."""
  what, key, want = effect
  if what == "object":
    kind, name = key.split("/", 1)
    found = any(o["kind"] == kind and o["metadata"]["name"] == name
                for o in objects)
    return None if found == want else (
        f"{key}: {'missing' if want else 'rendered, expected none'}")
  ds = [o for o in objects if o["kind"] == "DaemonSet"]
  if len(ds) != 1:
    return f"expected one DaemonSet, found {len(ds)}"
  ds = ds[0]
  c = ds["spec"]["template"]["spec"]["containers"][0]
  if what == "env":
    got = setting(c, (), key)
    present = any(e["name"] == key for e in c.get("env") or [])
    if want is None:
      return None if not present else f"env {key}: {got!r}, expected unset"
    return None if got == want else f"env {key}: {got!r}, expected {want!r}"
  if what == "mount":
    volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"].get(
        "volumes") or []}
    m, v = mount_of(c, volumes, key)
    exact = m is not None and m["mountPath"].rstrip("/") == key.rstrip("/")
    host = v["hostPath"]["path"] if exact and v and "hostPath" in v else None
    if want is None:
      return None if host is None else f"{key}: mounts host {host}, " \
                                       "expected nothing"
    return None if host == want else (f"{key}: host path {host!r}, expected "
                                      f"{want!r}")
  if what == "field":
    root = ds if key.split(".")[0] in ("spec", "metadata") else c
    got = _get(root, key)
    if want is str:
      return None if isinstance(got, str) and got else f"{key}: {got!r}, " \
                                                       "expected a string"
    return None if got == want else f"{key}: {got!r}, expected {want!r}"
  return f"unknown effect {what}"


# Checks of check_plugin a case may leave out, when the value moves what it
# checks away from our defaults on purpose.
_SKIPS = {
    "skip-priority": "priorityClassName",
    "skip-name": "DaemonSet gpu-device-plugin",
    "skip-namespace": "metadata.namespace",
    "skip-host-paths": "device-plugins",
    "skip-dra-dirs": "plugins",
    "skip-nvidia-dra-defaults": ("readOnlyRootFilesystem", "9445"),
}


def expect_privileged(values):
  gpus = (((values.get("kubeletPlugin") or {}).get("containers") or {}).get(
      "gpus") or {})
  return bool((gpus.get("securityContext") or {}).get("privileged"))


def check_case(tools, chart, values, expect, effects):
  label = f"{chart} {json.dumps(values, sort_keys=True)}"
  objects, err = tools.template(chart, values)
  if err:
    return [f"{label}: helm template failed: {err}"]
  problems = []
  if expect is not None:
    skip = None
    if isinstance(expect, str):
      skip, expect = _SKIPS[expect], {}
      if chart == DRA:
        expect = {"device_api": "dra"}
      if expect_privileged(values):
        expect["privileged"] = True
    expect = dict(expect)
    extra = expect.pop("extra", [])
    if expect.get("config_file") in ("any", "mps"):
      expect["config_file"] = "yes"
    found = validate_manifests.check_rendering(chart, objects + extra,
                                               expect)
    skip = (skip,) if isinstance(skip, str) else skip or ()
    problems += [p for p in found if not any(k in p for k in skip)]
  for e in effects:
    p = check_effect(objects, e)
    if p:
      problems.append(f"{label}: {p}")
  return problems


def check_refused(tools, chart, values, needle):
  label = f"{chart} {json.dumps(values, sort_keys=True)}"
  objects, err = tools.template(chart, values)
  if err is None:
    return [f"{label}: rendered {len(objects)} object(s), expected a refusal "
            f"naming {needle}"]
  if needle not in err:
    return [f"{label}: refused without naming {needle}: {err}"]
  return []


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--deploy-dir", required=True)
  ap.add_argument("--helm", required=True)
  ap.add_argument("--kubectl", required=True,
                  help="the kubectl whose kustomize renders the overlays")
  args = ap.parse_args()
  tools = Tools(args.helm, args.kubectl, args.deploy_dir)
  for t in (args.helm, args.kubectl):
    if not os.access(t, os.X_OK):
      print(f"FAIL {t}: not found; scripts/deps.sh installs Helm and kubectl "
            "1.34 into build-tools/kubectl-v34/", file=sys.stderr)
      return 1

  jobs = []
  for chart in (DP, DRA):
    jobs.append(("lint", lambda c=chart: [
        f"helm lint {c}: {out}{err}" for rc, out, err in
        [run([tools.helm, "lint", tools.chart(c), "--strict", "--namespace",
              NAMESPACE])] if rc != 0]))
  jobs.append(("gates", lambda: check_gate_table(args.deploy_dir)))
  for pair in drift_pairs(args.deploy_dir):
    jobs.append(("drift", lambda p=pair: check_drift(tools, *p)))
  for case in CASES:
    jobs.append(("value", lambda c=case: check_case(tools, *c)))
  for case in REFUSED:
    jobs.append(("refused", lambda c=case: check_refused(tools, *c)))
  problems, counts = [], {}
  with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
    for (kind, _), found in zip(jobs, pool.map(lambda j: j[1](), jobs)):
      counts[kind] = counts.get(kind, 0) + 1
      problems += found
  print(", ".join(f"{n} {k}" for k, n in counts.items()))
  for p in problems:
    print(f"FAIL {p}", file=sys.stderr)
  if problems:
    print(f"{len(problems)} problem(s)", file=sys.stderr)
    return 1
  print("charts linted, match the overlays, NVIDIA's values checked")
  return 0


if __name__ == "__main__":
  sys.exit(main())
