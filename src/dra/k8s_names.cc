#include "dra/k8s_names.h"

#include "absl/strings/ascii.h"

namespace gdp::dra {
namespace {

bool IsLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

}  // namespace

bool IsDnsLabel(absl::string_view s) {
  if (s.empty() || s.size() > 63 || !IsLowerAlnum(s.front()) ||
      !IsLowerAlnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

bool IsDnsSubdomain(absl::string_view s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  size_t start = 0;
  for (;;) {
    const size_t dot = s.find('.', start);
    if (!IsDnsLabel(s.substr(start, dot - start))) return false;
    if (dot == absl::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsUid(absl::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace gdp::dra
