// GetPreferredAllocation's choice, in our own terms.
#ifndef GDP_PLUGIN_PREFERRED_H_
#define GDP_PLUGIN_PREFERRED_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "device/device.h"
#include "topology/node_topology.h"

namespace gdp {

// Chooses `size` devices from `available`, always including `must_include`.
//
// Without replicas among `available` (no device with replica >= 0): when
// `topology` is given and knows every available device as a whole GPU (by
// its gpu_uuid), the GPUs are chosen by topology (ChooseGpus: Choose's
// order among the usable GPUs, unusable ones only when needed; see
// docs/topology.md). Otherwise (no topology, MIG devices) prefers devices
// on one NUMA node: the node already holding most of `must_include`, then
// the smallest node group that still fits the request (keeping larger
// groups whole for larger requests). `policy` is not used.
//
// With replicas, devices are grouped by physical unit (visible_id; a
// device that is no replica is a unit of its own). A unit's load is how
// many of its devices in `list` are not free: in use by other containers,
// unhealthy, or in `must_include`; it grows as devices are chosen.
//   kDistributed: each device goes to a unit not yet in the answer (one of
//     `must_include`'s counts as in it) while any such unit has free
//     devices, so the answer spans min(size, units among `available`)
//     units when `must_include` holds at most one device per unit. Among
//     those, the least loaded unit first. With a topology that knows
//     every unit concerned as a whole GPU, the units of the least loaded
//     tier that is only partly needed are chosen by ChooseGpus (with the
//     units of `must_include` as its must-include).
//   kPacked: the answer spans the fewest units possible: the units of
//     `must_include` first, then the fewest further units whose free
//     devices suffice; among the ways to do that, the most loaded units
//     first (a unit that fits the rest alone is the most loaded such one).
//     With such a topology, when the answer spans two or more units, the
//     way is the one with the most NVLinked pairs, then the highest pair
//     score (over all units of the answer), then the most load, then the
//     fewest free devices (weighed exhaustively up to 20,000 ways, else
//     the rule without topology).
// Ties go to the unit on the NUMA node holding most of the answer so far,
// then to device-list order.
//
// Deterministic. Result: must_include first, then the chosen devices in
// device-list order. Result on failure: InvalidArgument naming the problem
// (size < 1 or larger than what is available, an ID unknown or repeated, a
// must-include ID not available, more must-include IDs than size).
// `topology` may be null; it must outlive the call. Thread-safe.
absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    const DeviceList& list, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size,
    SharedAllocationPolicy policy, const NodeTopology* topology = nullptr);

}  // namespace gdp

#endif  // GDP_PLUGIN_PREFERRED_H_
