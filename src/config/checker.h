// The checks Validate (config.h) is made of, shared by its files. Internal
// to config/.
#ifndef GDP_CONFIG_CHECKER_H_
#define GDP_CONFIG_CHECKER_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "config/config.h"
#include "config/names.h"

namespace gdp::config_internal {

// Checks one setting; each error is "<where(path)>: <message>".
class Checker {
 public:
  explicit Checker(absl::FunctionRef<std::string(absl::string_view)> where)
      : where_(where) {}

  absl::Status Error(absl::string_view path, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(where_(path), ": ", message));
  }

  std::string Where(absl::string_view path) const { return where_(path); }

  absl::Status AbsolutePath(absl::string_view path,
                            const std::string& value) const {
    if (value.empty() || value[0] != '/') {
      return Error(path,
                   absl::StrCat("must be an absolute path, got '", value, "'"));
    }
    return absl::OkStatus();
  }

  absl::Status ResourceName(absl::string_view path,
                            absl::string_view name) const {
    if (absl::Status s = CheckResourceName(name); !s.ok()) {
      return Error(path, s.message());
    }
    return absl::OkStatus();
  }

 private:
  absl::FunctionRef<std::string(absl::string_view)> where_;
};

// `d` as sharing's (and dra's) devices: a count of at least 1, or a
// non-empty list of valid, distinct references; errors name `path` and the
// list index.
absl::Status ValidateDevices(const SharedDevices& d, absl::string_view path,
                             const Checker& check);

// `path` fits a unix socket address (107 bytes and a NUL); the error names
// `flag`.
absl::Status CheckSocketPath(absl::string_view flag, const std::string& path,
                             const Checker& check);

// The DRA settings (config.dra, dra.devices) when the device API serves
// DRA; dra.devices is checked in every mode.
absl::Status ValidateDra(const Config& config, const Checker& check);

// Consumable shares and the memory-limit hook: --consumable-shares needs the
// ConsumableShares gate (as NVIDIA's driver), --memory-limit-hook=nvidia its
// executable's path.
absl::Status ValidateShares(const Config& config, const Checker& check);

}  // namespace gdp::config_internal

#endif  // GDP_CONFIG_CHECKER_H_
