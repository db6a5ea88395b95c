#include "cmd/probes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gdp {

absl::Status Liveness(const std::string& nvml_failure,
                      const std::vector<PluginStatus>& plugins) {
  if (!nvml_failure.empty()) {
    return absl::UnavailableError(absl::StrCat("NVML failed: ", nvml_failure));
  }
  std::vector<std::string> problems;
  for (const PluginStatus& p : plugins) {
    if (!p.registered) {
      problems.push_back(
          absl::StrCat(p.resource, " is not registered with the kubelet"));
    } else if (p.open_streams == 0) {
      problems.push_back(absl::StrCat(
          p.resource,
          " is registered but no kubelet watches it (ListAndWatch stream "
          "closed: kubelet gone?)"));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrJoin(problems, "; "));
}

absl::Status Readiness(const std::vector<PluginStatus>& plugins) {
  std::vector<std::string> unregistered;
  for (const PluginStatus& p : plugins) {
    if (!p.registered) unregistered.push_back(p.resource);
  }
  if (unregistered.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "not registered with the kubelet: ", absl::StrJoin(unregistered, ", ")));
}

}  // namespace gdp
