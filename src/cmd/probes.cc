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

std::vector<std::string> SharesNotes(bool shares_on,
                                     UnenforcedShares unenforced,
                                     const MemoryLimitSupport& node,
                                     const NodeGpus& dra_gpus) {
  std::vector<std::string> notes;
  if (!shares_on) return notes;
  for (const GpuInfo& g : dra_gpus.gpus) {
    const MemoryLimitSupport s = GpuMemoryLimitSupport(node, g);
    if (s.enforced) continue;
    const std::string gpu = absl::StrCat("GPU ", g.index, " (", g.uuid, ")",
                                         g.mig_enabled ? "'s MIG devices" : "");
    if (unenforced == UnenforcedShares::kAllow) {
      notes.push_back(absl::StrCat(
          gpu, g.mig_enabled ? " offer" : " offers",
          " consumable shares whose memory limits are not enforced: ",
          s.reason));
    } else {
      notes.push_back(absl::StrCat(
          gpu, g.mig_enabled ? " are" : " is",
          " published whole, without consumable shares: ", s.reason,
          " (--unenforced-shares=allow shares ", g.mig_enabled ? "them" : "it",
          " unenforced)"));
    }
  }
  return notes;
}

}  // namespace gdp
