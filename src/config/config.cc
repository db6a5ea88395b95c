#include "config/config.h"

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

absl::Status AbsolutePath(const char* name, const std::string& value) {
  if (value.empty() || value[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be an absolute path, got '", value, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Validate(const Config& c) {
  if (absl::Status s = AbsolutePath("--kubelet-socket", c.kubelet_socket);
      !s.ok()) {
    return s;
  }
  std::filesystem::path kubelet(c.kubelet_socket);
  if (!kubelet.has_filename()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kubelet-socket must name a socket file, got '",
                     c.kubelet_socket, "'"));
  }
  // sockaddr_un holds 108 bytes including the NUL.
  std::string ours = (kubelet.parent_path() / kSocketName).string();
  for (const std::string& path : {c.kubelet_socket, ours}) {
    if (path.size() > 107) {
      return absl::InvalidArgumentError(absl::StrCat(
          "socket path '", path,
          "' is longer than the 107 bytes a unix "
          "socket address holds; use a shorter --kubelet-socket directory"));
    }
  }
  if (absl::Status s = AbsolutePath("--driver-root", c.driver_root); !s.ok()) {
    return s;
  }
  if (!c.dev_root.empty()) {
    if (absl::Status s = AbsolutePath("--dev-root", c.dev_root); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = AbsolutePath("--sysfs-root", c.sysfs_root); !s.ok()) {
    return s;
  }
  if (c.nvml_retry_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--nvml-retry-interval must be positive");
  }
  if (c.verbosity < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("-v must be 0 or more, got ", c.verbosity));
  }
  return absl::OkStatus();
}

}  // namespace gdp
