// Internal to gdp_kube: the parts of ClientConfig::server.
#ifndef GDP_KUBE_SERVER_URL_H_
#define GDP_KUBE_SERVER_URL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gdp::kube::internal {

// The parts of ClientConfig::server.
struct ServerUrl {
  bool https = true;
  std::string host;       // unbracketed: "::1", "10.0.0.1", "api.example"
  int port = 443;         // 443 or 80 when the URL has none
  std::string base_path;  // "" or "/prefix" without a trailing slash
};

// Parses "https://host[:port][/prefix]" (or http://). An IPv6 host must be
// bracketed.
// Result on failure: InvalidArgument naming the URL and what is wrong
// (scheme, host, port, user info, query or fragment).
absl::StatusOr<ServerUrl> ParseServerUrl(absl::string_view url);

}  // namespace gdp::kube::internal

#endif  // GDP_KUBE_SERVER_URL_H_
