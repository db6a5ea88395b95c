#include "fake_nvml/machine.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace gdp::fake_nvml {
namespace {

// Parses 1..max_digits hex digits into *out, requiring *out <= max_value.
bool ParseHexField(absl::string_view text, size_t max_digits,
                   uint32_t max_value, uint32_t* out) {
  if (text.empty() || text.size() > max_digits) return false;
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  uint32_t value = 0;
  if (!absl::SimpleHexAtoi(text, &value) || value > max_value) return false;
  *out = value;
  return true;
}

void CopyField(const std::string& value, char* field, size_t size) {
  std::memset(field, 0, size);
  std::memcpy(field, value.data(), std::min(value.size(), size - 1));
}

}  // namespace

std::optional<PciAddress> ParsePciAddress(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() == 2) parts.insert(parts.begin(), "0");
  if (parts.size() != 3) return std::nullopt;
  std::vector<absl::string_view> dev_fn = absl::StrSplit(parts[2], '.');
  if (dev_fn.size() != 2) return std::nullopt;
  PciAddress address;
  if (!ParseHexField(parts[0], 8, 0xFFFFFFFF, &address.domain) ||
      !ParseHexField(parts[1], 2, 0xFF, &address.bus) ||
      !ParseHexField(dev_fn[0], 2, 0x1F, &address.device) ||
      !ParseHexField(dev_fn[1], 1, 7, &address.function)) {
    return std::nullopt;
  }
  return address;
}

std::string FormatBusId(const PciAddress& address) {
  return absl::StrFormat("%08X:%02X:%02X.0", address.domain, address.bus,
                         address.device);
}

std::string FormatLegacyBusId(const PciAddress& address) {
  return absl::StrFormat("%04X:%02X:%02X.0", address.domain, address.bus,
                         address.device);
}

std::string FormatSysfsBusId(const PciAddress& address) {
  return absl::StrFormat("%04x:%02x:%02x.%x", address.domain, address.bus,
                         address.device, address.function);
}

nvmlGpuTopologyLevel_t CommonAncestor(const Gpu& a, const Gpu& b) {
  if (a.board.has_value() && a.board == b.board) {
    return NVML_TOPOLOGY_INTERNAL;
  }
  if (a.host_bridge == b.host_bridge) {
    const size_t shared =
        std::mismatch(a.pcie_switches.begin(), a.pcie_switches.end(),
                      b.pcie_switches.begin(), b.pcie_switches.end())
            .first -
        a.pcie_switches.begin();
    if (shared > 0 && shared == a.pcie_switches.size() &&
        shared == b.pcie_switches.size()) {
      return NVML_TOPOLOGY_SINGLE;
    }
    if (shared > 0) return NVML_TOPOLOGY_MULTIPLE;
    return NVML_TOPOLOGY_HOSTBRIDGE;
  }
  if (a.numa_node == b.numa_node) return NVML_TOPOLOGY_NODE;
  return NVML_TOPOLOGY_SYSTEM;
}

nvmlDeviceArchitecture_t ArchitectureOf(int cc_major, int cc_minor) {
  switch (cc_major) {
    case 3:
      return NVML_DEVICE_ARCH_KEPLER;
    case 5:
      return NVML_DEVICE_ARCH_MAXWELL;
    case 6:
      return NVML_DEVICE_ARCH_PASCAL;
    case 7:
      if (cc_minor == 0 || cc_minor == 2) return NVML_DEVICE_ARCH_VOLTA;
      if (cc_minor == 5) return NVML_DEVICE_ARCH_TURING;
      return NVML_DEVICE_ARCH_UNKNOWN;
    case 8:
      if (cc_minor == 0 || cc_minor == 6 || cc_minor == 7) {
        return NVML_DEVICE_ARCH_AMPERE;
      }
      if (cc_minor == 9) return NVML_DEVICE_ARCH_ADA;
      return NVML_DEVICE_ARCH_UNKNOWN;
    case 9:
      return cc_minor == 0 ? NVML_DEVICE_ARCH_HOPPER : NVML_DEVICE_ARCH_UNKNOWN;
    case 10:
    case 12:
      return NVML_DEVICE_ARCH_BLACKWELL;
    default:
      return NVML_DEVICE_ARCH_UNKNOWN;
  }
}

bool RemapsRows(nvmlDeviceArchitecture_t architecture) {
  return architecture >= NVML_DEVICE_ARCH_AMPERE &&
         architecture != NVML_DEVICE_ARCH_UNKNOWN;
}

unsigned DriverMajor(absl::string_view driver_version) {
  unsigned value = 0;
  return absl::SimpleAtoi(driver_version.substr(0, driver_version.find('.')),
                          &value)
             ? value
             : 0;
}

unsigned long long DefaultSupportedEvents(absl::string_view driver_version,
                                          bool mig_capable) {
  const unsigned major = DriverMajor(driver_version);
  unsigned long long events =
      nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError |
      nvmlEventTypePState | nvmlEventTypeXidCriticalError | nvmlEventTypeClock |
      kEventPowerSourceChange;
  if (major >= 450 && mig_capable) events |= kEventMigConfigChange;
  if (major >= 560) {
    events |= kEventSingleBitEccErrorStorm | kEventDramRetirementEvent |
              kEventDramRetirementFailure | kEventNonFatalPoisonError |
              kEventFatalPoisonError;
  }
  if (major >= 565)
    events |= kEventGpuUnavailableError | kEventGpuRecoveryAction;
  return events;
}

bool KnowsGpuInstanceProfile(absl::string_view driver_version,
                             unsigned profile) {
  if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return false;
  return profile != NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX ||
         DriverMajor(driver_version) >= 595;
}

bool ReportsRecoveryAction(absl::string_view driver_version) {
  return DriverMajor(driver_version) >= 565;
}

unsigned DefaultPcieGeneration(nvmlDeviceArchitecture_t architecture) {
  if (architecture <= NVML_DEVICE_ARCH_TURING) return 3;
  if (architecture <= NVML_DEVICE_ARCH_ADA) return 4;
  return 5;
}

nvmlPciInfo_t MakePciInfo(const PciAddress& address, uint32_t device_id,
                          uint32_t subsystem_id) {
  nvmlPciInfo_t info;
  std::memset(&info, 0, sizeof(info));
  CopyField(FormatLegacyBusId(address), info.busIdLegacy,
            sizeof(info.busIdLegacy));
  CopyField(FormatBusId(address), info.busId, sizeof(info.busId));
  info.domain = address.domain;
  info.bus = address.bus;
  info.device = address.device;
  info.pciDeviceId = device_id;
  info.pciSubSystemId = subsystem_id;
  return info;
}

}  // namespace gdp::fake_nvml
