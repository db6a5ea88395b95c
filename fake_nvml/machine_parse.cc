#include "fake_nvml/machine_parse.h"

#include <cstdint>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "fake_nvml/machine_fields.h"
#include "fake_nvml/yaml_reader.h"

namespace gdp::fake_nvml {
namespace {

constexpr uint64_t kMaxU32 = std::numeric_limits<uint32_t>::max();

NvLink ParseNvLink(const YAML::Node& node, const std::string& path) {
  YamlMap map(node, path);
  NvLink link;
  if (auto state = map.Optional("state")) {
    const std::string text = ParseString(*state, map.FieldPath("state"));
    if (text != "active" && text != "inactive") {
      throw FieldError(LineOf(*state), map.FieldPath("state"),
                       "must be active or inactive");
    }
    link.active = text == "active";
  }
  std::optional<YAML::Node> gpu = map.Optional("peer_gpu");
  std::optional<YAML::Node> nvswitch = map.Optional("peer_switch");
  if (gpu.has_value() == nvswitch.has_value()) {
    throw FieldError(map.line(), map.FieldPath("peer_gpu"),
                     "exactly one of peer_gpu and peer_switch is required");
  }
  if (gpu.has_value()) {
    link.peer_kind = LinkPeer::kGpu;
    link.peer = ParseUint(*gpu, map.FieldPath("peer_gpu"), kMaxGpus - 1);
  } else {
    link.peer_kind = LinkPeer::kNvSwitch;
    link.peer = ParseUint(*nvswitch, map.FieldPath("peer_switch"), kMaxU32);
  }
  map.Finish();
  return link;
}

void ParsePlacement(YamlMap& map, Gpu* gpu, GpuLines* lines) {
  gpu->numa_node = static_cast<int>(ParseInt(
      map.Required("numa_node"), map.FieldPath("numa_node"), -1, 1023));
  YAML::Node bridge = map.Required("host_bridge");
  lines->host_bridge = LineOf(bridge);
  gpu->host_bridge = ParseUint(bridge, map.FieldPath("host_bridge"), 255);
  if (auto switches = map.Optional("pcie_switches")) {
    const std::string field = map.FieldPath("pcie_switches");
    lines->pcie_switches = LineOf(*switches);
    std::vector<YAML::Node> items = ParseSequence(*switches, field);
    for (size_t i = 0; i < items.size(); ++i) {
      gpu->pcie_switches.push_back(
          ParseUint(items[i], absl::StrCat(field, "[", i, "]"), kMaxU32));
    }
  }
  if (auto board = map.Optional("board")) {
    gpu->board = ParseUint(*board, map.FieldPath("board"), kMaxU32);
  }
}

void ParseMig(YamlMap& map, Gpu* gpu) {
  if (auto capable = map.Optional("mig_capable")) {
    gpu->mig_capable = ParseBool(*capable, map.FieldPath("mig_capable"));
  }
  auto read_mode = [&](const char* key, unsigned fallback) {
    std::optional<YAML::Node> node = map.Optional(key);
    if (!node.has_value()) return fallback;
    const unsigned mode = ParseMigMode(*node, map.FieldPath(key));
    if (mode == NVML_DEVICE_MIG_ENABLE && !gpu->mig_capable) {
      throw FieldError(LineOf(*node), map.FieldPath(key),
                       "MIG cannot be enabled without mig_capable: true");
    }
    return mode;
  };
  gpu->mig_current = read_mode("mig_mode", NVML_DEVICE_MIG_DISABLE);
  gpu->mig_pending = read_mode("mig_pending_mode", gpu->mig_current);
  ParseGpuInstances(map, gpu);
}

}  // namespace

Gpu ParseGpu(const YAML::Node& node, const std::string& path,
             absl::string_view driver_version, GpuLines* lines) {
  YamlMap map(node, path);
  Gpu gpu;
  gpu.name = ParseBoundedString(map.Required("name"), map.FieldPath("name"),
                                NVML_DEVICE_NAME_V2_BUFFER_SIZE - 1);
  YAML::Node uuid = map.Required("uuid");
  lines->uuid = LineOf(uuid);
  gpu.uuid = ParseGpuUuid(uuid, map.FieldPath("uuid"));
  YAML::Node minor = map.Required("minor");
  lines->minor = LineOf(minor);
  gpu.minor = ParseUint(minor, map.FieldPath("minor"), 255);
  YAML::Node bus_id = map.Required("bus_id");
  lines->bus_id = LineOf(bus_id);
  gpu.pci = ParseBusId(bus_id, map.FieldPath("bus_id"));
  gpu.pci_device_id = ParseUint(map.Required("pci_device_id"),
                                map.FieldPath("pci_device_id"), kMaxU32);
  gpu.pci_subsystem_id = ParseUint(map.Required("pci_subsystem_id"),
                                   map.FieldPath("pci_subsystem_id"), kMaxU32);
  if (auto pci_class = map.Optional("pci_class")) {
    gpu.pci_class = static_cast<uint32_t>(
        ParseUint(*pci_class, map.FieldPath("pci_class"), 0xFFFFFF));
  }
  constexpr uint64_t kMaxMib = uint64_t{1} << 30;
  const uint64_t total_mib = ParseUint(map.Required("memory_mib"),
                                       map.FieldPath("memory_mib"), kMaxMib);
  uint64_t used_mib = 0;
  if (auto used = map.Optional("memory_used_mib")) {
    used_mib = ParseUint(*used, map.FieldPath("memory_used_mib"), total_mib);
  }
  gpu.memory_total_bytes = total_mib << 20;
  gpu.memory_used_bytes = used_mib << 20;
  ParseComputeCapability(map.Required("compute_capability"),
                         map.FieldPath("compute_capability"), &gpu.cc_major,
                         &gpu.cc_minor);
  if (auto brand = map.Optional("brand")) {
    gpu.brand = ParseBrand(*brand, map.FieldPath("brand"));
  }
  gpu.architecture = ArchitectureOf(gpu.cc_major, gpu.cc_minor);
  if (auto architecture = map.Optional("architecture")) {
    gpu.architecture =
        ParseArchitecture(*architecture, map.FieldPath("architecture"));
  }
  ParsePlacement(map, &gpu, lines);
  ParseMig(map, &gpu);
  gpu.supported_events =
      DefaultSupportedEvents(driver_version, gpu.mig_capable);
  if (auto events = map.Optional("supported_events")) {
    gpu.supported_events =
        ParseEvents(*events, map.FieldPath("supported_events"));
  }
  ParseGpuHealth(map, &gpu);
  if (auto links = map.Optional("nvlinks")) {
    const std::string field = map.FieldPath("nvlinks");
    std::vector<YAML::Node> items = ParseSequence(*links, field);
    if (items.size() > NVML_NVLINK_MAX_LINKS) {
      throw FieldError(
          LineOf(*links), field,
          absl::StrCat("at most ", NVML_NVLINK_MAX_LINKS, " links per GPU"));
    }
    for (size_t i = 0; i < items.size(); ++i) {
      gpu.nvlinks.push_back(
          ParseNvLink(items[i], absl::StrCat(field, "[", i, "]")));
      lines->nvlinks.push_back(LineOf(items[i]));
    }
  }
  map.Finish();
  return gpu;
}

NvSwitch ParseNvSwitch(const YAML::Node& node, const std::string& path,
                       NvSwitchLines* lines) {
  YamlMap map(node, path);
  NvSwitch nvswitch;
  YAML::Node bus_id = map.Required("bus_id");
  lines->bus_id = LineOf(bus_id);
  nvswitch.pci = ParseBusId(bus_id, map.FieldPath("bus_id"));
  nvswitch.pci_device_id = ParseUint(map.Required("pci_device_id"),
                                     map.FieldPath("pci_device_id"), kMaxU32);
  map.Finish();
  return nvswitch;
}

}  // namespace gdp::fake_nvml
