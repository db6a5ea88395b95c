#include "config/config.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "config/checker.h"
#include "config/names.h"
#include "config/settings.h"

namespace gdp {
namespace {

using config_internal::Checker;
using config_internal::CheckSocketPath;
using config_internal::ValidateDevices;
using config_internal::ValidateDra;
using config_internal::ValidateShares;

absl::Status ValidateKubeletSocket(const Config& c, const Checker& check) {
  if (absl::Status s = check.AbsolutePath("--kubelet-socket", c.kubelet_socket);
      !s.ok()) {
    return s;
  }
  std::filesystem::path kubelet(c.kubelet_socket);
  if (!kubelet.has_filename()) {
    return check.Error(
        "--kubelet-socket",
        absl::StrCat("must name a socket file, got '", c.kubelet_socket, "'"));
  }
  std::string ours = (kubelet.parent_path() / kSocketName).string();
  for (const std::string& path : {c.kubelet_socket, ours}) {
    if (absl::Status st = CheckSocketPath("--kubelet-socket", path, check);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

// Each setting's own bound (absolute paths), named by its path.
absl::Status ValidateSettings(const Config& c, const Checker& check) {
  for (const Setting& setting : Settings()) {
    if (absl::Status s = setting.value->Check(c); !s.ok()) {
      return check.Error(setting.path(), s.message());
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateDeviceListStrategies(const Config& c,
                                          const Checker& check) {
  constexpr absl::string_view kPath = "flags.plugin.deviceListStrategy";
  if (c.device_list_strategies.empty()) {
    return check.Error(kPath, absl::StrCat("needs at least one of ",
                                           NameChoices<DeviceListStrategy>()));
  }
  std::set<DeviceListStrategy> seen;
  for (DeviceListStrategy s : c.device_list_strategies) {
    if (!seen.insert(s).second) {
      return check.Error(kPath, absl::StrCat("lists '", NameOf(s), "' twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidatePatterns(const std::vector<ResourcePattern>& patterns,
                              absl::string_view base, const Checker& check) {
  absl::flat_hash_map<std::string, size_t> seen;  // pattern -> index
  for (size_t i = 0; i < patterns.size(); ++i) {
    const std::string entry = absl::StrCat(base, "[", i, "]");
    const ResourcePattern& r = patterns[i];
    if (r.pattern.empty()) {
      return check.Error(absl::StrCat(entry, ".pattern"), "must not be empty");
    }
    if (auto [it, added] = seen.emplace(r.pattern, i); !added) {
      return check.Error(absl::StrCat(entry, ".pattern"),
                         absl::StrCat("'", r.pattern, "' is already used by ",
                                      base, "[", it->second, "]"));
    }
    if (absl::Status s =
            check.ResourceName(absl::StrCat(entry, ".name"), r.name);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::string_view SharingPath(SharingStrategy s) {
  return s == SharingStrategy::kMps ? "sharing.mps" : "sharing.timeSlicing";
}

absl::Status ValidateSharing(const Config& c, const Checker& check) {
  const Sharing& sharing = c.sharing;
  if (sharing.strategy == SharingStrategy::kNone) {
    if (!sharing.resources.empty()) {
      return check.Error("sharing",
                         "has resources but neither timeSlicing nor mps");
    }
    return absl::OkStatus();
  }
  const std::string base(SharingPath(sharing.strategy));
  const std::string resources = absl::StrCat(base, ".resources");
  if (sharing.resources.empty()) {
    return check.Error(resources, "must list at least one resource");
  }
  // Full names of the entries, and the names they are advertised under.
  absl::flat_hash_map<std::string, size_t> names;
  absl::flat_hash_map<std::string, size_t> advertised;
  for (size_t i = 0; i < sharing.resources.size(); ++i) {
    const SharedResource& r = sharing.resources[i];
    const std::string entry = absl::StrCat(resources, "[", i, "]");
    const std::string name_path = absl::StrCat(entry, ".name");
    if (absl::Status s = check.ResourceName(name_path, r.name); !s.ok()) {
      return s;
    }
    if (auto [it, added] = names.emplace(r.name, i); !added) {
      return check.Error(name_path,
                         absl::StrCat("'", r.name, "' is already listed at ",
                                      resources, "[", it->second, "]"));
    }
    const std::string rename_path = absl::StrCat(entry, ".rename");
    if (!r.rename.empty()) {
      if (absl::Status s = check.ResourceName(rename_path, r.rename); !s.ok()) {
        return s;
      }
    } else if (sharing.rename_by_default) {
      if (absl::Status s = CheckResourceName(AdvertisedName(sharing, r));
          !s.ok()) {
        return check.Error(name_path,
                           absl::StrCat("with renameByDefault, ", s.message()));
      }
    }
    if (r.replicas < 2) {
      return check.Error(absl::StrCat(entry, ".replicas"),
                         absl::StrCat("must be at least 2, got ", r.replicas));
    }
    if (absl::Status s =
            ValidateDevices(r.devices, absl::StrCat(entry, ".devices"), check);
        !s.ok()) {
      return s;
    }
  }
  // A shared resource may not be advertised under a name another entry
  // shares (or keeps for the devices it does not share).
  for (size_t i = 0; i < sharing.resources.size(); ++i) {
    const SharedResource& r = sharing.resources[i];
    const std::string name = AdvertisedName(sharing, r);
    const std::string path = absl::StrCat(
        resources, "[", i, r.rename.empty() ? "].name" : "].rename");
    if (auto it = names.find(name); it != names.end() && it->second != i) {
      return check.Error(
          path, absl::StrCat("is advertised as '", name, "', the name of ",
                             resources, "[", it->second, "]"));
    }
    if (auto [it, added] = advertised.emplace(name, i); !added) {
      return check.Error(
          path, absl::StrCat("is advertised as '", name, "', as ", resources,
                             "[", it->second, "] is"));
    }
  }
  // memoryPerReplica is enforced by the hook of our CDI spec, which the
  // runtime runs only for GPUs it gets through CDI: with envvar or
  // volume-mounts the GPU reaches the container another way (the NVIDIA
  // runtime's own), which would start it unlimited.
  for (size_t i = 0; i < sharing.resources.size(); ++i) {
    if (sharing.resources[i].memory_per_replica == 0) continue;
    for (DeviceListStrategy s : c.device_list_strategies) {
      if (s == DeviceListStrategy::kEnvvar ||
          s == DeviceListStrategy::kVolumeMounts) {
        return check.Error(
            absl::StrCat(resources, "[", i, "].memoryPerReplica"),
            absl::StrCat(
                "needs the device list strategies to be CDI only "
                "(cdi-annotations and/or cdi-cri; ",
                check.Where("flags.plugin.deviceListStrategy"), " has ",
                s == DeviceListStrategy::kEnvvar ? "envvar" : "volume-mounts",
                "): the memory limit is applied by the hook in the CDI spec, "
                "which the runtime does not run for GPUs given another way"));
      }
    }
  }
  if (sharing.strategy == SharingStrategy::kMps) {
    if (c.mps_root.empty()) {
      return check.Error(base,
                         "needs the MPS root directory (--mps-root, MPS_ROOT "
                         "or flags.mpsRoot)");
    }
    // As NVIDIA: MPS shares full GPUs only.
    if (c.mig_strategy == MigStrategy::kMixed) {
      return check.Error(
          base,
          absl::StrCat("cannot be used with MIG strategy 'mixed' (set by ",
                       check.Where("flags.migStrategy"), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string AdvertisedName(const Sharing& sharing, const SharedResource& r) {
  if (!r.rename.empty()) return r.rename;
  if (sharing.rename_by_default) return absl::StrCat(r.name, kSharedSuffix);
  return r.name;
}

absl::Status Validate(const Config& c,
                      absl::FunctionRef<std::string(absl::string_view)> where) {
  Checker check(where);
  if (absl::Status s = ValidateKubeletSocket(c, check); !s.ok()) return s;
  if (absl::Status s = ValidateSettings(c, check); !s.ok()) return s;
  if (c.nvml_retry_interval <= absl::ZeroDuration()) {
    return check.Error("--nvml-retry-interval", "must be positive");
  }
  if (c.verbosity < 0) {
    return check.Error("-v",
                       absl::StrCat("must be 0 or more, got ", c.verbosity));
  }
  if (absl::Status s = CheckAnnotationPrefix(c.cdi_annotation_prefix);
      !s.ok()) {
    return check.Error("flags.plugin.cdiAnnotationPrefix", s.message());
  }
  if (absl::Status s = ValidateDeviceListStrategies(c, check); !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidatePatterns(c.gpu_resources, "resources.gpus", check);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidatePatterns(c.mig_resources, "resources.mig", check);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateSharing(c, check); !s.ok()) return s;
  if (absl::Status s = ValidateDra(c, check); !s.ok()) return s;
  if (absl::Status s = ValidateShares(c, check); !s.ok()) return s;
  for (auto [path, text] :
       {std::pair<const char*, const std::string&>{"health.disableHealthchecks",
                                                   c.disable_healthchecks},
        {"health.enableHealthchecks", c.enable_healthchecks}}) {
    for (absl::string_view entry : absl::StrSplit(text, ',')) {
      std::string e = absl::AsciiStrToLower(absl::StripAsciiWhitespace(entry));
      uint64_t xid = 0;
      bool number = !e.empty() &&
                    std::all_of(e.begin(), e.end(), absl::ascii_isdigit) &&
                    absl::SimpleAtoi(e, &xid);
      if (!e.empty() && e != "all" && e != "xids" && !number) {
        return check.Error(path,
                           absl::StrCat("'", absl::StripAsciiWhitespace(entry),
                                        "' is not all, xids or an XID number"));
      }
    }
  }
  if (c.gfd.sleep_interval <= absl::ZeroDuration()) {
    return check.Error("flags.gfd.sleepInterval", "must be positive");
  }
  if (!c.metrics_address.empty()) {
    size_t colon = c.metrics_address.rfind(':');
    int port = 0;
    if (colon == std::string::npos ||
        !absl::SimpleAtoi(c.metrics_address.substr(colon + 1), &port) ||
        port < 1 || port > 65535) {
      return check.Error("--metrics-address",
                         absl::StrCat("must be host:port or :port, got '",
                                      c.metrics_address, "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const Config& config) {
  return Validate(config, [](absl::string_view path) {
    const Setting* setting = SettingAtPath(path);
    return std::string(setting != nullptr ? setting->name() : path);
  });
}

}  // namespace gdp
