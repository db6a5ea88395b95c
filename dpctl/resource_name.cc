#include "resource_name.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gdp::dpctl {
namespace {

// Limits from k8s.io/apimachinery/pkg/util/validation.
constexpr size_t kMaxSubdomainLength = 253;
constexpr size_t kMaxNameLength = 63;
constexpr absl::string_view kRequestsPrefix = "requests.";

bool IsLowerAlnum(char c) {
  return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'z');
}

// A DNS-1123 subdomain: dot-separated labels of [a-z0-9-], each starting and
// ending with [a-z0-9].
absl::Status CheckSubdomain(absl::string_view domain) {
  size_t label_start = 0;
  for (size_t i = 0; i <= domain.size(); ++i) {
    if (i < domain.size() && domain[i] != '.') {
      char c = domain[i];
      if (!IsLowerAlnum(c) && c != '-') {
        return absl::InvalidArgumentError(absl::StrCat(
            "domain \"", domain, "\" has character '", std::string(1, c),
            "'; only lower-case letters, digits, '-' and '.' are allowed"));
      }
      continue;
    }
    absl::string_view label = domain.substr(label_start, i - label_start);
    if (label.empty() || !IsLowerAlnum(label.front()) ||
        !IsLowerAlnum(label.back())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "domain \"", domain,
          "\" is not a DNS-1123 subdomain (each dot-separated part must start "
          "and end with a lower-case letter or digit)"));
    }
    label_start = i + 1;
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
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.') {
      return absl::InvalidArgumentError(absl::StrCat(
          "the name after '/' has character '", std::string(1, c),
          "'; only letters, digits, '-', '_' and '.' are allowed"));
    }
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
