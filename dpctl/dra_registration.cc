#include "dra_registration.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gdp::dpctl {
namespace {

// A list as Go's %q prints a []string: ["a" "b"].
template <typename Strings>
std::string GoQuoted(const Strings& items) {
  return absl::StrCat("[",
                      absl::StrJoin(items, " ",
                                    [](std::string* out, const std::string& s) {
                                      absl::StrAppend(out, "\"", s, "\"");
                                    }),
                      "]");
}

std::string ValidationError(absl::string_view why) {
  return absl::StrCat(
      "RegisterPlugin error -- plugin validation failed with "
      "err: ",
      why);
}

}  // namespace

RegistrationReport ValidatePluginInfo(
    const std::string& socket, const pluginregistration::PluginInfo& info,
    const KubeletApis& apis) {
  RegistrationReport r;
  r.socket = socket;
  r.driver = info.name();
  r.endpoint = info.endpoint().empty() ? socket : info.endpoint();
  r.versions.assign(info.supported_versions().begin(),
                    info.supported_versions().end());
  if (info.type() != kDraPluginType) {
    r.error = absl::StrCat(
        "RegisterPlugin error -- no handler registered for plugin type: ",
        info.type(), " at socket ", socket);
    return r;
  }
  if (r.driver.empty()) {
    r.error = ValidationError("the DRA driver name is empty");
    return r;
  }
  if (r.endpoint.front() != '/') {
    r.error = ValidationError(absl::StrCat("endpoint \"", r.endpoint,
                                           "\" of DRA driver plugin ", r.driver,
                                           " is not an absolute path"));
    return r;
  }
  std::vector<std::string> known;
  for (DraApi api : apis.known) known.push_back(ApiService(api));
  const std::string prefix =
      absl::StrCat("invalid supported gRPC versions of DRA driver plugin ",
                   r.driver, " at endpoint ", r.endpoint, ": ");
  if (r.versions.empty()) {
    r.error = ValidationError(
        absl::StrCat(prefix,
                     "empty list of supported gRPC services (aka supported "
                     "versions)"));
    return r;
  }
  for (const std::string& version : r.versions) {
    for (DraApi api : apis.known) {
      if (version == ApiService(api)) {
        r.api = api;
        break;
      }
    }
    if (r.api.has_value()) break;
  }
  if (!r.api.has_value()) {
    r.error = ValidationError(
        absl::StrCat(prefix, "none of services supported by the plugin (",
                     GoQuoted(r.versions), ") are supported by the kubelet (",
                     GoQuoted(known), ")"));
    return r;
  }
  r.health = apis.health && std::find(r.versions.begin(), r.versions.end(),
                                      kHealthService) != r.versions.end();
  return r;
}

}  // namespace gdp::dpctl
