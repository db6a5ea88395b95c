#include "labels/node_facts.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "health/signals.h"
#include "util/logging.h"
#include "util/read_file.h"

namespace gdp {
namespace {

// The whole file (a small one: facts from sysfs and DMI), or an error
// naming `path`; a FIFO in its place is refused, not waited on.
absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  return ReadRegularFile(path, {.max_bytes = 64 << 10});
}

}  // namespace

std::string ReadMachineType(const std::string& path) {
  if (path.empty()) return "unknown";
  absl::StatusOr<std::string> text = ReadWhole(path);
  if (!text.ok()) {
    LOG_WARN("Machine type unknown: {}", text.status().message());
    return "unknown";
  }
  return std::string(absl::StripAsciiWhitespace(*text));
}

absl::StatusOr<uint32_t> ReadPciClass(const std::string& sysfs_root,
                                      const std::string& bus_id) {
  const std::string path =
      absl::StrCat(sysfs_root, "/bus/pci/devices/", bus_id, "/class");
  absl::StatusOr<std::string> text = ReadWhole(path);
  if (!text.ok()) return text.status();
  absl::string_view value = absl::StripAsciiWhitespace(*text);
  uint32_t pci_class = 0;
  if (!absl::ConsumePrefix(&value, "0x") ||
      !absl::SimpleHexAtoi(value, &pci_class)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a PCI class: '", *text, "'"));
  }
  return pci_class;
}

GpuConditions ReadGpuConditions(const Nvml& nvml, const NodeGpus& node) {
  GpuConditions out;
  for (const GpuInfo& g : node.gpus) {
    absl::StatusOr<nvmlDevice_t> handle = nvml.DeviceByUuid(g.uuid);
    if (!handle.ok()) {
      VLOG(1, "GPU {}: conditions not read: {}", g.uuid,
           handle.status().message());
      continue;
    }
    absl::StatusOr<NvmlPcieLink> link = nvml.PcieLink(*handle);
    if (link.ok()) {
      out.pcie_degraded = out.pcie_degraded || PcieDegraded(*link);
    } else {
      VLOG(1, "GPU {}: PCIe link not read: {}", g.uuid,
           link.status().message());
    }
    absl::StatusOr<unsigned long long> reasons = nvml.ThrottleReasons(*handle);
    if (reasons.ok()) {
      out.throttled = out.throttled || (*reasons & kSlowdownReasons) != 0;
    } else {
      VLOG(1, "GPU {}: throttle reasons not read: {}", g.uuid,
           reasons.status().message());
    }
  }
  return out;
}

NodeFacts ReadNodeFacts(const NodeGpus& node, const Config& config,
                        absl::Time timestamp) {
  NodeFacts facts;
  facts.machine_type = ReadMachineType(config.gfd.machine_type_file);
  for (const GpuInfo& g : node.gpus) {
    absl::StatusOr<uint32_t> pci_class =
        ReadPciClass(config.sysfs_root, g.pci_bus_id);
    if (!pci_class.ok()) {
      LOG_WARN("GPU mode unknown: {}", pci_class.status().message());
    }
    facts.pci_classes.push_back(std::move(pci_class));
  }
  if (!config.gfd.no_timestamp) facts.timestamp = timestamp;
  return facts;
}

}  // namespace gdp
