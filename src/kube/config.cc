#include "kube/config.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "kube/files.h"

namespace gdp::kube {

std::string JoinHostPort(std::string_view host, std::string_view port) {
  std::string h(host);
  if (h.find(':') != std::string::npos && !h.starts_with('[')) {
    h = "[" + h + "]";
  }
  return h + ":" + std::string(port);
}

absl::StatusOr<ClientConfig> InClusterConfig(std::string_view host,
                                             std::string_view port,
                                             const std::string& sa_dir) {
  if (host.empty() || port.empty()) {
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT must both be set");
  }
  ClientConfig config;
  config.server = "https://" + JoinHostPort(host, port);
  config.token_file = sa_dir + "/token";
  config.ca_file = sa_dir + "/ca.crt";
  absl::StatusOr<std::string> token = ReadSmallFile(config.token_file);
  if (!token.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("service-account token: ", token.status().message()));
  }
  if (absl::StripAsciiWhitespace(*token).empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("service-account token ", config.token_file, " is empty"));
  }
  absl::StatusOr<std::string> ca = ReadSmallFile(config.ca_file);
  if (!ca.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cluster CA: ", ca.status().message()));
  }
  absl::StatusOr<std::string> ns = ReadSmallFile(sa_dir + "/namespace");
  if (ns.ok()) {
    config.default_namespace = std::string(absl::StripAsciiWhitespace(*ns));
  }
  return config;
}

}  // namespace gdp::kube
