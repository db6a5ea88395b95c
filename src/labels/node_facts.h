// Reading what the labels need besides NVML: the machine type (DMI) and
// each GPU's PCI class (sysfs), and gathering them into NodeFacts.
#ifndef GDP_LABELS_NODE_FACTS_H_
#define GDP_LABELS_NODE_FACTS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "device/gpu.h"
#include "labels/labels.h"
#include "nvml/nvml.h"

namespace gdp {

// The contents of `path` (DMI product_name) with surrounding white space
// trimmed; "unknown" when `path` is empty or cannot be read (logged as a
// warning, as GFD does).
std::string ReadMachineType(const std::string& path);

// The PCI class of the device with sysfs bus id `bus_id` (lower case, as in
// GpuInfo::pci_bus_id), from <sysfs_root>/bus/pci/devices/<bus_id>/class
// ("0x030200"). Result on failure: NotFound/Internal when the file cannot be
// read, InvalidArgument when it is not a number; the message names the path.
absl::StatusOr<uint32_t> ReadPciClass(const std::string& sysfs_root,
                                      const std::string& bus_id);

// The conditions of the GPUs of `node` the operator labels show, read
// through NVML (by UUID): pcie_degraded when some GPU's PCIe link trains
// below its maximum generation or width, throttled when some GPU reports
// a slowdown throttle reason (health/signals.h kSlowdownReasons). A GPU or
// a read that fails (NOT_SUPPORTED included) counts as neither; failures
// are logged at -v 1.
struct GpuConditions {
  bool pcie_degraded = false;
  bool throttled = false;
};
GpuConditions ReadGpuConditions(const Nvml& nvml, const NodeGpus& node);

// Machine type from config.gfd.machine_type_file, each GPU's PCI class under
// config.sysfs_root, and `timestamp` unless config.gfd.no_timestamp.
NodeFacts ReadNodeFacts(const NodeGpus& node, const Config& config,
                        absl::Time timestamp);

}  // namespace gdp

#endif  // GDP_LABELS_NODE_FACTS_H_
