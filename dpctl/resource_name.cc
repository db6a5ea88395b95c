#include "resource_name.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gdp::dpctl {
namespace {

// Limits from k8s.io/apimachinery/pkg/util/validation.
constexpr size_t kMaxSubdomainLength = 253;
constexpr size_t kMaxNameLength = 63;
constexpr absl::string_view kRequestsPrefix = "requests.";
constexpr char kDomainChars[] = "abcdefghijklmnopqrstuvwxyz0123456789-.";
constexpr char kNameChars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";

// '<c>': the first character of `s` outside `allowed`, or "" when none.
std::string Outside(absl::string_view s, const char* allowed) {
  const size_t bad = s.find_first_not_of(allowed);
  return bad == absl::string_view::npos
             ? ""
             : absl::StrCat("'", s.substr(bad, 1), "'");
}

// A DNS-1123 subdomain: dot-separated labels of [a-z0-9-], each starting and
// ending with [a-z0-9].
absl::Status CheckSubdomain(absl::string_view domain) {
  if (std::string c = Outside(domain, kDomainChars); !c.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "domain \"", domain, "\" has character ", c,
        "; only lower-case letters, digits, '-' and '.' are allowed"));
  }
  for (absl::string_view label : absl::StrSplit(domain, '.')) {
    if (label.empty() || label.front() == '-' || label.back() == '-') {
      return absl::InvalidArgumentError(absl::StrCat(
          "domain \"", domain,
          "\" is not a DNS-1123 subdomain (each dot-separated part must start "
          "and end with a lower-case letter or digit)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckName(absl::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError("the name after '/' is empty");
  }
  if (name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the name after '/' is longer than ", kMaxNameLength, " characters"));
  }
  if (std::string c = Outside(name, kNameChars); !c.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the name after '/' has character ", c,
                     "; only letters, digits, '-', '_' and '.' are allowed"));
  }
  if (!absl::ascii_isalnum(name.front()) || !absl::ascii_isalnum(name.back())) {
    return absl::InvalidArgumentError(
        "the name after '/' must start and end with a letter or digit");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateExtendedResourceName(absl::string_view name) {
  auto invalid = [name](absl::string_view reason) {
    return absl::InvalidArgumentError(
        absl::StrCat("resource name \"", name,
                     "\" is not an extended resource name: ", reason));
  };
  size_t slash = name.find('/');
  if (slash == absl::string_view::npos) {
    return invalid(
        "it needs a domain prefix, as in example.com/name (names without "
        "one are native resources)");
  }
  if (name.find('/', slash + 1) != absl::string_view::npos) {
    return invalid("it has more than one '/'");
  }
  absl::string_view domain = name.substr(0, slash);
  if (domain.empty()) return invalid("the domain before '/' is empty");
  if (absl::EndsWith(domain, "kubernetes.io")) {
    return invalid(
        "the kubernetes.io domains are reserved for native "
        "resources");
  }
  if (absl::StartsWith(name, kRequestsPrefix)) {
    return invalid("the \"requests.\" prefix is reserved for quota");
  }
  // The kubelet checks the quota form "requests.<name>", so the domain must
  // leave room for that prefix.
  if (domain.size() + kRequestsPrefix.size() > kMaxSubdomainLength) {
    return invalid(absl::StrCat("the domain is longer than ",
                                kMaxSubdomainLength - kRequestsPrefix.size(),
                                " characters"));
  }
  if (absl::Status s = CheckSubdomain(domain); !s.ok()) {
    return invalid(s.message());
  }
  if (absl::Status s = CheckName(name.substr(slash + 1)); !s.ok()) {
    return invalid(s.message());
  }
  return absl::OkStatus();
}

}  // namespace gdp::dpctl
