// The best set of GPUs for one allocation, from a Topology.
#ifndef GDP_TOPOLOGY_CHOOSE_H_
#define GDP_TOPOLOGY_CHOOSE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "topology/topology.h"

namespace gdp {

// Above this many usable available GPUs, Choose is a bounded-time heuristic
// instead of exact.
inline constexpr int kChooseExactLimit = 16;

// Chooses `size` GPUs (indices into `topology`) among the usable GPUs of
// `available` (unusable ones are skipped), containing all of `must_include`.
// Among those sets it returns the one that, in this order:
//   1. has the most pairs joined by NVLink (Topology::NvLinked);
//   2. leaves the best connected rest: the highest total PairScore over the
//      pairs of the available usable GPUs not chosen;
//   3. has the highest total PairScore over its own pairs;
//   4. spans the fewest distinct NUMA nodes (unknown, -1, counts as one);
//   5. is lexicographically smallest as a sorted index list.
// (1) before (3): an NVLinked set is taken from GPUs that are already
// broken up before one is cut out of a whole NVLink group, even when the
// whole group would give this request more links; see docs/topology.md.
// Exact when at most kChooseExactLimit usable GPUs are available (an
// exhaustive walk over the sets with the objective kept incrementally:
// C(16, 8) = 12870 sets at most). Above that, greedy growth from every
// seed GPU, then pairwise-swap improvement of the best few: bounded time,
// deterministic, but not always optimal. See docs/topology.md.
//
// Result: the chosen indices in ascending order. Result on failure:
// InvalidArgument naming the problem: size < 1; an index out of range or
// repeated in `available` or `must_include`; a must-include GPU that is not
// available or not usable; more must-include GPUs than `size`; `size`
// larger than the number of usable available GPUs.
// Thread-safe (pure function).
absl::StatusOr<std::vector<int>> Choose(const Topology& topology,
                                        const std::vector<int>& available,
                                        const std::vector<int>& must_include,
                                        int size);

}  // namespace gdp

#endif  // GDP_TOPOLOGY_CHOOSE_H_
