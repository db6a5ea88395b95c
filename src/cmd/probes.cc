#include "cmd/probes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gdp {

absl::Status Liveness(const std::string& nvml_failure,
                      const std::vector<PluginStatus>& plugins,
                      const std::optional<DraProbe>& dra) {
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
  if (dra.has_value() && !dra->serving) {
    problems.push_back("the DRA plugin's sockets are not served");
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrJoin(problems, "; "));
}

absl::Status Readiness(const std::vector<PluginStatus>& plugins,
                       const std::optional<DraProbe>& dra) {
  std::vector<std::string> unregistered;
  for (const PluginStatus& p : plugins) {
    if (!p.registered) unregistered.push_back(p.resource);
  }
  std::vector<std::string> problems;
  if (!unregistered.empty()) {
    problems.push_back(absl::StrCat("not registered with the kubelet: ",
                                    absl::StrJoin(unregistered, ", ")));
  }
  if (dra.has_value()) {
    if (!dra->registered) {
      problems.push_back(absl::StrCat(
          "the DRA driver is not registered with the kubelet",
          dra->registration_error.empty()
              ? ""
              : absl::StrCat(" (it refused: ", dra->registration_error, ")")));
    }
    if (!dra->slices_in_sync) {
      problems.push_back(
          absl::StrCat("the ResourceSlices are not published",
                       dra->slices_error.empty()
                           ? ""
                           : absl::StrCat(" (", dra->slices_error, ")")));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrJoin(problems, "; "));
}

}  // namespace gdp
