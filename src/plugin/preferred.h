// GetPreferredAllocation's choice, in our own terms.
#ifndef GDP_PLUGIN_PREFERRED_H_
#define GDP_PLUGIN_PREFERRED_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "device/device.h"

namespace gdp {

// Chooses `size` devices from `available`, always including `must_include`,
// preferring devices on one NUMA node: the node already holding most of
// `must_include`, then the smallest node group that still fits the request
// (keeping larger groups whole for larger requests). Deterministic: ties go
// to the lower NUMA node and to device-list order.
// Result: must_include first, then the chosen devices in device-list order.
// Result on failure: InvalidArgument naming the problem (size < 1 or larger
// than what is available, an ID unknown or repeated, a must-include ID not
// available, more must-include IDs than size).
absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    const DeviceList& list, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size);

}  // namespace gdp

#endif  // GDP_PLUGIN_PREFERRED_H_
