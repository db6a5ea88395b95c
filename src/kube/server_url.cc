#include "kube/server_url.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gdp::kube::internal {

absl::StatusOr<ServerUrl> ParseServerUrl(absl::string_view url) {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("server URL '", url, "': ", what));
  };
  ServerUrl out;
  absl::string_view rest = url;
  if (absl::ConsumePrefix(&rest, "https://")) {
    out.https = true;
    out.port = 443;
  } else if (absl::ConsumePrefix(&rest, "http://")) {
    out.https = false;
    out.port = 80;
  } else {
    return bad("must start with https:// or http://");
  }
  if (rest.find_first_of("?#") != absl::string_view::npos) {
    return bad("a query or fragment is not allowed");
  }
  size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  absl::string_view path =
      slash == absl::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != absl::string_view::npos) {
    return bad("user info is not allowed");
  }
  absl::string_view port;
  if (absl::ConsumePrefix(&authority, "[")) {
    size_t close = authority.find(']');
    if (close == absl::string_view::npos) return bad("unclosed '['");
    out.host = std::string(authority.substr(0, close));
    absl::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (!absl::ConsumePrefix(&after, ":") || after.empty()) {
        return bad("bad port after ']'");
      }
      port = after;
    }
  } else {
    size_t colon = authority.find(':');
    if (colon != absl::string_view::npos &&
        authority.find(':', colon + 1) != absl::string_view::npos) {
      return bad("an IPv6 host must be in brackets");
    }
    out.host = std::string(authority.substr(0, colon));
    if (colon != absl::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return bad("empty port");
    }
  }
  if (out.host.empty()) return bad("no host");
  if (!port.empty()) {
    int n = 0;
    if (!absl::SimpleAtoi(port, &n) || n < 1 || n > 65535) {
      return bad("bad port");
    }
    out.port = n;
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  out.base_path = std::string(path);
  return out;
}

}  // namespace gdp::kube::internal
