// Topology-aware choice of whole GPUs for GetPreferredAllocation, in terms
// of topology positions, that still answers when some GPUs cannot be
// ranked.
#ifndef GDP_PLUGIN_GPU_CHOICE_H_
#define GDP_PLUGIN_GPU_CHOICE_H_

#include <vector>

#include "topology/topology.h"

namespace gdp {

// Chooses `size` of `available` (positions in `topology`), containing
// `must_include`, by Choose's order among the usable GPUs. GPUs the
// topology marks unusable (lost, links unreadable) are left out while the
// usable ones suffice; a must-include one is always in, and when too few
// usable GPUs are available the rest is filled from the unusable ones in
// `available` order, so the kubelet still gets an answer.
// Result: positions, ascending.
// REQUIRES: positions in range and distinct; must_include within
// available; must_include.size() <= size <= available.size().
// Thread-safe (pure function).
std::vector<int> ChooseGpus(const Topology& topology,
                            const std::vector<int>& available,
                            const std::vector<int>& must_include, int size);

}  // namespace gdp

#endif  // GDP_PLUGIN_GPU_CHOICE_H_
