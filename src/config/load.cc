#include "config/load.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "config/config_file.h"

namespace gdp {
namespace {

// The file's value of `setting`, unless a flag or variable gave it.
template <typename T>
void Take(const std::optional<T>& from_file, Setting setting,
          const ExplicitSettings& given, T* out) {
  if (from_file.has_value() && !given.contains(setting)) *out = *from_file;
}

// Settings only the file has.
template <typename T>
void Take(const std::optional<T>& from_file, T* out) {
  if (from_file.has_value()) *out = *from_file;
}

void Apply(const ConfigFile& f, const ExplicitSettings& given, Config& c) {
  Take(f.mig_strategy, Setting::kMigStrategy, given, &c.mig_strategy);
  Take(f.fail_on_init_error, Setting::kFailOnInitError, given,
       &c.fail_on_init_error);
  Take(f.driver_root, Setting::kDriverRoot, given, &c.driver_root);
  Take(f.dev_root, Setting::kDevRoot, given, &c.dev_root);
  Take(f.mps_root, Setting::kMpsRoot, given, &c.mps_root);
  Take(f.pass_device_specs, Setting::kPassDeviceSpecs, given,
       &c.pass_device_specs);
  Take(f.device_list_strategies, Setting::kDeviceListStrategy, given,
       &c.device_list_strategies);
  Take(f.device_id_strategy, Setting::kDeviceIdStrategy, given,
       &c.device_id_strategy);
  Take(f.cdi_annotation_prefix, Setting::kCdiAnnotationPrefix, given,
       &c.cdi_annotation_prefix);
  Take(f.container_driver_root, Setting::kContainerDriverRoot, given,
       &c.container_driver_root);
  Take(f.shared_allocation_policy, Setting::kSharedAllocationPolicy, given,
       &c.shared_allocation_policy);
  Take(f.disable_healthchecks, Setting::kDisableHealthchecks, given,
       &c.disable_healthchecks);
  Take(f.enable_healthchecks, Setting::kEnableHealthchecks, given,
       &c.enable_healthchecks);
  Take(f.gfd_oneshot, Setting::kGfdOneshot, given, &c.gfd.oneshot);
  Take(f.gfd_no_timestamp, Setting::kGfdNoTimestamp, given,
       &c.gfd.no_timestamp);
  Take(f.gfd_sleep_interval, Setting::kGfdSleepInterval, given,
       &c.gfd.sleep_interval);
  Take(f.gfd_output_file, Setting::kGfdOutputFile, given, &c.gfd.output_file);
  Take(f.gfd_machine_type_file, Setting::kGfdMachineTypeFile, given,
       &c.gfd.machine_type_file);
  Take(f.device_api, Setting::kDeviceApi, given, &c.device_api);
  if (f.dra_devices.has_value()) c.dra.devices = f.dra_devices;
  Take(f.gpu_resources, &c.gpu_resources);
  Take(f.mig_resources, &c.mig_resources);
  Take(f.sharing, &c.sharing);
}

// Names a setting where its value came from (see LoadConfig).
std::string Where(absl::string_view path, const ConfigFile* file,
                  const ExplicitSettings& given) {
  auto in_file = [&](int line) {
    return absl::StrCat(file->path, ":", line, ": ", path);
  };
  for (const SettingName& n : kSettingNames) {
    if (n.file_path != path) continue;
    if (!given.contains(n.setting) && file != nullptr) {
      if (auto it = file->lines.find(path); it != file->lines.end()) {
        return in_file(it->second);
      }
    }
    return std::string(n.flag);
  }
  if (file != nullptr) {
    if (int line = file->LineOf(path); line > 0) return in_file(line);
  }
  return std::string(path);
}

}  // namespace

absl::StatusOr<Config> LoadConfig(const Config& from_flags,
                                  const ExplicitSettings& given) {
  Config config = from_flags;
  std::optional<ConfigFile> file;
  if (!config.config_file.empty()) {
    absl::StatusOr<ConfigFile> read = ReadConfigFile(config.config_file);
    if (!read.ok()) return read.status();
    file = *std::move(read);
    Apply(*file, given, config);
  }
  const ConfigFile* f = file.has_value() ? &*file : nullptr;
  if (absl::Status s = Validate(
          config,
          [&](absl::string_view path) { return Where(path, f, given); });
      !s.ok()) {
    return s;
  }
  return config;
}

}  // namespace gdp
