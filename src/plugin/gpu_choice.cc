#include "plugin/gpu_choice.h"

#include <algorithm>

#include "topology/choose.h"
#include "util/logging.h"

namespace gdp {

std::vector<int> ChooseGpus(const Topology& topology,
                            const std::vector<int>& available,
                            const std::vector<int>& must_include, int size) {
  std::vector<int> usable, unusable, out;
  for (int g : available) (topology.Usable(g) ? usable : unusable).push_back(g);
  std::vector<int> usable_must;
  for (int g : must_include) {
    if (topology.Usable(g)) {
      usable_must.push_back(g);
    } else {
      out.push_back(g);
    }
  }
  const int want = size - static_cast<int>(out.size());
  if (want > static_cast<int>(usable.size())) {
    // Every usable GPU, then unusable ones to make up the size.
    out.insert(out.end(), usable.begin(), usable.end());
    for (int g : unusable) {
      if (static_cast<int>(out.size()) == size) break;
      if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
    }
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
      out.insert(out.end(), usable_must.begin(), usable_must.end());
      for (int g : usable) {
        if (static_cast<int>(out.size()) == size) break;
        if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gdp
