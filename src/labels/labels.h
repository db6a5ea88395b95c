// Node labels as NVIDIA's GPU feature discovery (GFD) produces them: a pure
// function from the discovered GPUs, the config and a few node facts to the
// label map. Names and value formats follow GFD (docs/labels.md lists them).
#ifndef GDP_LABELS_LABELS_H_
#define GDP_LABELS_LABELS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "config/config.h"
#include "device/gpu.h"

namespace gdp {

// Label name -> value, sorted by name.
using Labels = std::map<std::string, std::string>;

// What the labels need besides NVML's view of the GPUs.
struct NodeFacts {
  // The DMI product name as read (ReadMachineType): sanitised here.
  std::string machine_type = "unknown";
  // The PCI class of each GPU of NodeGpus::gpus, in the same order
  // (ReadPciClass); an error: unreadable. Fewer entries than GPUs: the
  // missing ones are unreadable.
  std::vector<absl::StatusOr<uint32_t>> pci_classes;
  // nvidia.com/gfd.timestamp (Unix seconds); absent: no timestamp label.
  std::optional<absl::Time> timestamp;
  // Our own labels for the operator (not GFD's), each given only when
  // true (ReadGpuConditions): nvidia.com/gpu.pcie-degraded, some GPU's PCIe
  // link trains below its maximum generation or width;
  // nvidia.com/gpu.throttled, some GPU's clocks are slowed down (hardware,
  // thermal or power brake slowdown).
  bool pcie_degraded = false;
  bool throttled = false;
};

// The labels for `node` under `config` (mig_strategy, sharing) and `facts`.
// With no GPUs only the timestamp label is given, as GFD does.
// Labels for the full GPUs use the resource name nvidia.com/gpu, MIG
// devices under mixed nvidia.com/mig-<profile> (GFD's names, whatever
// resources.gpus/mig advertise). When GPUs of several models are present,
// nvidia.com/gpu.* describe one model: the one with the most GPUs (ties: the
// lowest-indexed GPU's), GPUs with MIG disabled beating those with MIG
// enabled; gpu.count is that model's count.
// Result on failure: InvalidArgument when the driver version is not
// "X.Y[.Z]"; FailedPrecondition when sharing.mps is configured while a GPU
// has MIG enabled (GFD refuses to label then too).
absl::StatusOr<Labels> ComputeLabels(const NodeGpus& node, const Config& config,
                                     const NodeFacts& facts);

// GFD's sanitising of label values: characters other than letters, digits,
// '-', '_', '.' and ' ' are dropped, then runs of blanks become one '-' and
// leading/trailing blanks go: "Tesla T4" -> "Tesla-T4".
std::string SanitiseLabelValue(absl::string_view value);

// The GPU family for a CUDA compute capability, as GFD names it ("kepler",
// "ampere", "ada-lovelace", "hopper", "blackwell", ...; "undefined" for an
// unknown major).
std::string GpuFamily(int cc_major, int cc_minor);

// nvidia.com/gpu.mode from the GPUs' PCI classes: "graphics" when every GPU
// is a VGA controller (0x030000), "compute" when every one is a 3D
// controller (0x030200), "unknown" when a class is unreadable, the classes
// differ, it is another class, or there are none.
std::string GpuMode(const std::vector<absl::StatusOr<uint32_t>>& classes);

}  // namespace gdp

#endif  // GDP_LABELS_LABELS_H_
