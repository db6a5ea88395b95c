#include "plugin/gpu_choice.h"

#include <algorithm>

#include "topology/choose.h"
#include "util/logging.h"

namespace gdp {

namespace {

// Appends GPUs of `from` not in `out` until `out` holds `size`.
void FillFrom(const std::vector<int>& from, int size, std::vector<int>& out) {
  for (int g : from) {
    if (static_cast<int>(out.size()) == size) return;
    if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  }
}

}  // namespace

std::vector<int> ChooseGpus(const Topology& topology,
                            const std::vector<int>& available,
                            const std::vector<int>& must_include, int size) {
  std::vector<int> usable, unusable, usable_must, out;
  for (int g : available) (topology.Usable(g) ? usable : unusable).push_back(g);
  for (int g : must_include) {
    (topology.Usable(g) ? usable_must : out).push_back(g);
  }
  const int want = size - static_cast<int>(out.size());
  if (want > static_cast<int>(usable.size())) {
    // Every usable GPU, then unusable ones to make up the size.
    FillFrom(usable, size, out);
    FillFrom(unusable, size, out);
    LOG_WARN(
        "GetPreferredAllocation: {} GPU(s) wanted but only {} can be ranked "
        "by topology; the answer includes GPUs whose links are unknown",
        size, usable.size());
  } else if (want > 0) {
    absl::StatusOr<std::vector<int>> chosen =
        Choose(topology, usable, usable_must, want);
    if (chosen.ok()) {
      out.insert(out.end(), chosen->begin(), chosen->end());
    } else {  // only when a REQUIRES is broken
      LOG_ERROR("GetPreferredAllocation: topology choice failed: {}",
                chosen.status().message());
      FillFrom(usable_must, size, out);
      FillFrom(usable, size, out);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gdp
