// HealthMonitor: what a sweep's read of the GPUs' health signals does
// (declared in monitor.h; docs/health.md describes each signal).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "health/health_metrics.h"
#include "health/monitor.h"
#include "util/logging.h"

namespace gdp {

bool HealthMonitor::ApplySignals(Watched& gpu, const GpuSignals& signals,
                                 absl::Time now) {
  for (const std::string& error : signals.errors) {
    if (std::find(gpu.signal_errors.begin(), gpu.signal_errors.end(), error) !=
        gpu.signal_errors.end()) {
      continue;
    }
    gpu.signal_errors.push_back(error);
    VLOG(1,
         "GPU {} {}: cannot read a health signal (not unhealthy by "
         "itself): {}",
         gpu.ref.index, gpu.ref.uuid, error);
  }
  SetSignalMetrics(gpu.ref, signals);
  if (const auto& rows = signals.remapped_rows; rows.has_value()) {
    Condition(
        gpu, gpu.remap_pending, rows->pending,
        absl::StrCat("row remapping pending (nvmlDeviceGetRemappedRows: ",
                     rows->uncorrectable,
                     " rows remapped after uncorrectable and ", rows->corrected,
                     " after correctable memory errors; the remapping "
                     "takes effect at the next GPU reset)"),
        "until the GPU is reset",
        "row remapping is no longer pending: the GPU was reset", now);
    Condition(gpu, gpu.remap_failure, rows->failure,
              "row remapping failed (nvmlDeviceGetRemappedRows: a memory row "
              "could not be remapped)",
              "until the GPU is replaced or the node reboots",
              "NVML no longer reports a row remapping failure", now);
  }
  if (signals.retired_pages_pending.has_value()) {
    Condition(gpu, gpu.pages_pending, *signals.retired_pages_pending,
              "retired pages pending (nvmlDeviceGetRetiredPagesPendingStatus: "
              "a page retired after memory errors takes effect at the next "
              "GPU reset)",
              "until the GPU is reset",
              "retired pages are no longer pending: the GPU was reset", now);
  }
  return ApplyNvLinks(gpu, signals.nvlinks, now);
}

void HealthMonitor::Condition(Watched& gpu, std::optional<bool>& seen,
                              bool now_set, const std::string& what,
                              const std::string& until,
                              const std::string& cleared, absl::Time now) {
  const bool was_set = seen.value_or(false);
  seen = now_set;
  if (now_set && !was_set) {
    tracker_.OnNeedsReset(gpu.ref, what, until,
                          HealthCause{HealthCause::Kind::kEcc, 0}, now);
  } else if (!now_set && was_set) {
    tracker_.OnReset(gpu.ref, cleared, now);
  }
}

bool HealthMonitor::ApplyNvLinks(Watched& gpu, const std::vector<bool>& links,
                                 absl::Time now) {
  bool changed = false;
  gpu.nvlinks_down.resize(std::max(gpu.nvlinks_down.size(), links.size()));
  for (size_t k = 0; k < links.size() && k < gpu.nvlinks.size(); ++k) {
    if (gpu.nvlinks[k] == links[k]) continue;
    changed = true;
    if (!links[k]) {
      gpu.nvlinks_down[k] = true;
      CountNvLinkDown(gpu.ref, static_cast<unsigned>(k));
      LOG_WARN("GPU {} {}: NVLink {} went inactive; reading the topology again",
               gpu.ref.index, gpu.ref.uuid, k);
      if (options_.nvlink_down_unhealthy) {
        tracker_.OnNeedsReset(gpu.ref,
                              absl::StrCat("NVLink ", k, " went inactive"),
                              "until the GPU is reset",
                              HealthCause{HealthCause::Kind::kNvLink, 0}, now);
      }
    } else {
      LOG_INFO("GPU {} {}: NVLink {} is active again", gpu.ref.index,
               gpu.ref.uuid, k);
    }
  }
  // Keep what was known of links this read did not reach.
  for (size_t k = 0; k < links.size(); ++k) {
    if (k < gpu.nvlinks.size()) {
      gpu.nvlinks[k] = links[k];
    } else {
      gpu.nvlinks.push_back(links[k]);
    }
  }
  bool still_down = false;
  bool any_went_down = false;
  for (size_t k = 0; k < gpu.nvlinks_down.size(); ++k) {
    if (!gpu.nvlinks_down[k]) continue;
    any_went_down = true;
    if (k >= gpu.nvlinks.size() || !gpu.nvlinks[k]) still_down = true;
  }
  if (changed && any_went_down && !still_down) {
    std::fill(gpu.nvlinks_down.begin(), gpu.nvlinks_down.end(), false);
    if (options_.nvlink_down_unhealthy) {
      tracker_.OnReset(gpu.ref,
                       "every NVLink that went inactive is active again", now);
    }
  }
  return changed;
}

}  // namespace gdp
