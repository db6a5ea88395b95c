// Validation of the DRA side's settings and the checks config.cc shares.
#include <filesystem>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "config/checker.h"
#include "config/names.h"

namespace gdp::config_internal {

absl::Status ValidateDevices(const SharedDevices& d, absl::string_view path,
                             const Checker& check) {
  switch (d.kind) {
    case SharedDevices::Kind::kAll:
      return absl::OkStatus();
    case SharedDevices::Kind::kCount:
      if (d.count < 1) {
        return check.Error(path, absl::StrCat("a number of devices must be at "
                                              "least 1, got ",
                                              d.count));
      }
      return absl::OkStatus();
    case SharedDevices::Kind::kList:
      break;
  }
  if (d.list.empty()) {
    return check.Error(path, "must list at least one device");
  }
  absl::flat_hash_map<std::string, size_t> seen;
  for (size_t i = 0; i < d.list.size(); ++i) {
    const std::string item = absl::StrCat(path, "[", i, "]");
    if (!IsDeviceRef(d.list[i])) {
      return check.Error(item,
                         absl::StrCat("'", d.list[i],
                                      "' is not a GPU index (\"0\"), MIG index "
                                      "(\"0:1\"), GPU UUID or MIG UUID"));
    }
    if (auto [it, added] = seen.emplace(d.list[i], i); !added) {
      return check.Error(
          item, absl::StrCat("'", d.list[i], "' is already listed at [",
                             it->second, "]"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSocketPath(absl::string_view flag, const std::string& path,
                             const Checker& check) {
  if (path.size() > 107) {
    return check.Error(
        flag, absl::StrCat("socket path '", path,
                           "' is longer than the 107 bytes a unix socket "
                           "address holds; use a shorter directory"));
  }
  return absl::OkStatus();
}

absl::Status ValidateDra(const Config& c, const Checker& check) {
  const DraConfig& d = c.dra;
  if (d.devices.has_value()) {
    if (absl::Status s = ValidateDevices(*d.devices, "dra.devices", check);
        !s.ok()) {
      return s;
    }
  }
  if (!c.ServesDra()) return absl::OkStatus();
  if (absl::Status s = CheckDnsSubdomain(d.driver_name, 63); !s.ok()) {
    return check.Error("--dra-driver-name", s.message());
  }
  if (d.node_name.empty()) {
    return check.Error("--node-name",
                       "is required with --device-api=dra or both (in a pod, "
                       "set NODE_NAME from the downward API: spec.nodeName)");
  }
  if (absl::Status s = CheckDnsSubdomain(d.node_name, 253); !s.ok()) {
    return check.Error("--node-name", s.message());
  }
  for (auto [flag, dir] :
       {std::pair<const char*, const std::string&>{"--kubelet-registration-dir",
                                                   d.registration_dir},
        {"--kubelet-plugins-dir", d.plugins_dir}}) {
    if (absl::Status s = check.AbsolutePath(flag, dir); !s.ok()) return s;
  }
  const std::filesystem::path reg = std::filesystem::path(d.registration_dir) /
                                    absl::StrCat(d.driver_name, "-reg.sock");
  const std::filesystem::path endpoint =
      std::filesystem::path(d.plugins_dir) / d.driver_name / "dra.sock";
  if (absl::Status s =
          CheckSocketPath("--kubelet-registration-dir", reg.string(), check);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckSocketPath("--kubelet-plugins-dir", endpoint.string(), check);
      !s.ok()) {
    return s;
  }
  if (d.kubeconfig.empty() && (d.api_host.empty() || d.api_port.empty())) {
    return check.Error(
        "--kubeconfig",
        "is required outside a pod: KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT are not set, so the API server cannot be "
        "found in-cluster");
  }
  if (!d.kubeconfig.empty()) {
    if (absl::Status s = check.AbsolutePath("--kubeconfig", d.kubeconfig);
        !s.ok()) {
      return s;
    }
  }
  if (c.device_api == DeviceApi::kBoth && !d.devices.has_value()) {
    return check.Error(
        "dra.devices",
        absl::StrCat("must name the GPUs DRA serves when the device API is "
                     "'both' (set by ",
                     check.Where("flags.deviceAPI"),
                     "); the device plugin serves the others"));
  }
  return absl::OkStatus();
}

absl::Status ValidateShares(const Config& c, const Checker& check) {
  if (c.consumable_shares.mode != ConsumableShares::Mode::kDisabled &&
      !c.feature_gates.consumable_shares) {
    return check.Error("--consumable-shares",
                       "requires feature gate ConsumableShares to be enabled "
                       "(--feature-gates=ConsumableShares=true), as in "
                       "NVIDIA's driver");
  }
  if (c.memory_limit_hook == MemoryLimitHookKind::kNvidia &&
      c.memory_limit_hook_path == kDefaultMemoryLimitHookPath) {
    return check.Error(
        "--memory-limit-hook-path",
        absl::StrCat("must name the container toolkit's nvidia-cdi-hook (or "
                     "nvidia-ctk) on the host (for example "
                     "/usr/bin/nvidia-cdi-hook) with "
                     "--memory-limit-hook=nvidia; ",
                     kDefaultMemoryLimitHookPath, " is ours"));
  }
  return absl::OkStatus();
}

}  // namespace gdp::config_internal
