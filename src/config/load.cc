#include "config/load.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "config/config_file.h"
#include "config/settings.h"

namespace gdp {
namespace {

// Settings only the file has.
template <typename T>
void Take(const std::optional<T>& from_file, T* out) {
  if (from_file.has_value()) *out = *from_file;
}

void Apply(const ConfigFile& f, const ExplicitSettings& given, Config& c) {
  for (const Setting& s : Settings()) {
    if (f.Gives(s.file) && !given.contains(s.name())) {
      s.value->Copy(f.settings, &c);
    }
  }
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
  if (const Setting* s = SettingAtPath(path); s != nullptr) {
    if (!given.contains(s->name()) && file != nullptr) {
      if (auto it = file->lines.find(path); it != file->lines.end()) {
        return in_file(it->second);
      }
    }
    return std::string(s->name());
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
