#include "kube/path.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gdp::kube {

std::string PercentEscape(absl::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '-' || c == '.' || c == '_' ||
        c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
  return out;
}

std::string ResourcePath(absl::string_view group, absl::string_view version,
                         absl::string_view resource,
                         absl::string_view namespace_name,
                         absl::string_view name) {
  std::string path = group.empty()
                         ? absl::StrCat("/api/", version)
                         : absl::StrCat("/apis/", group, "/", version);
  if (!namespace_name.empty()) {
    absl::StrAppend(&path, "/namespaces/", PercentEscape(namespace_name));
  }
  absl::StrAppend(&path, "/", resource);
  if (!name.empty()) absl::StrAppend(&path, "/", PercentEscape(name));
  return path;
}

QueryParams ListParams(const ListOptions& options) {
  QueryParams params;
  if (!options.field_selector.empty()) {
    params.emplace_back("fieldSelector", options.field_selector);
  }
  if (!options.label_selector.empty()) {
    params.emplace_back("labelSelector", options.label_selector);
  }
  if (!options.resource_version.empty()) {
    params.emplace_back("resourceVersion", options.resource_version);
  }
  if (options.limit > 0) {
    params.emplace_back("limit", absl::StrCat(options.limit));
  }
  if (!options.continue_token.empty()) {
    params.emplace_back("continue", options.continue_token);
  }
  return params;
}

std::string QueryString(const QueryParams& params) {
  std::string query;
  for (const auto& [key, value] : params) {
    absl::StrAppend(&query, query.empty() ? "?" : "&", PercentEscape(key), "=",
                    PercentEscape(value));
  }
  return query;
}

}  // namespace gdp::kube
