// URL paths and query strings of the Kubernetes API.
#ifndef GDP_KUBE_PATH_H_
#define GDP_KUBE_PATH_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace gdp::kube {

// Options of a list, delete-collection or watch call. Empty fields and a
// zero limit are left out of the query.
struct ListOptions {
  std::string field_selector;    // "spec.nodeName=n1,spec.driver=d"
  std::string label_selector;    // "app=x"
  std::string resource_version;  // list: "0" serves from the cache
  int limit = 0;                 // list: page size
  std::string continue_token;    // list: the previous page's
                                 // metadata.continue
};

// Query parameters in order, as name and (unescaped) value.
using QueryParams = std::vector<std::pair<std::string, std::string>>;

// `s` with every byte but RFC 3986's unreserved characters (A-Z a-z 0-9
// - . _ ~) percent-encoded: safe as one path segment or a query value.
std::string PercentEscape(absl::string_view s);

// The path of a collection or an object:
//   core group (""):  /api/<version>[/namespaces/<ns>]/<resource>[/<name>]
//   other groups: /apis/<group>/<version>[/namespaces/<ns>]/<resource>[/<name>]
// `namespace_name` and `name` are escaped; empty ones are left out.
std::string ResourcePath(absl::string_view group, absl::string_view version,
                         absl::string_view resource,
                         absl::string_view namespace_name = "",
                         absl::string_view name = "");

// The parameters for `options`: fieldSelector, labelSelector,
// resourceVersion, limit, continue.
QueryParams ListParams(const ListOptions& options);

// "?a=1&b=x%20y" from `params` (escaped), or "" when there are none.
std::string QueryString(const QueryParams& params);

}  // namespace gdp::kube

#endif  // GDP_KUBE_PATH_H_
