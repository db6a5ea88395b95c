#include "fake_nvml/machine_fields.h"

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "fake_nvml/yaml_reader.h"

namespace gdp::fake_nvml {
namespace {

// The names accepted in supported_events, with their NVML bits.
struct EventName {
  const char* name;
  unsigned long long bit;
};
constexpr EventName kEventNames[] = {
    {"xid", nvmlEventTypeXidCriticalError},
    {"single_bit_ecc", nvmlEventTypeSingleBitEccError},
    {"double_bit_ecc", nvmlEventTypeDoubleBitEccError},
    {"pstate", nvmlEventTypePState},
    {"clock", nvmlEventTypeClock},
    {"power_source_change", kEventPowerSourceChange},
    {"mig_config_change", kEventMigConfigChange},
    {"single_bit_ecc_storm", kEventSingleBitEccErrorStorm},
    {"dram_retirement", kEventDramRetirementEvent},
    {"dram_retirement_failure", kEventDramRetirementFailure},
    {"non_fatal_poison", kEventNonFatalPoisonError},
    {"fatal_poison", kEventFatalPoisonError},
    {"gpu_unavailable", kEventGpuUnavailableError},
    {"gpu_recovery_action", kEventGpuRecoveryAction},
};

// The names accepted for `brand`, as NVML_BRAND_* lower-cased.
struct BrandName {
  const char* name;
  nvmlBrandType_t brand;
};
constexpr BrandName kBrandNames[] = {
    {"unknown", NVML_BRAND_UNKNOWN},
    {"quadro", NVML_BRAND_QUADRO},
    {"tesla", NVML_BRAND_TESLA},
    {"nvs", NVML_BRAND_NVS},
    {"grid", NVML_BRAND_GRID},
    {"geforce", NVML_BRAND_GEFORCE},
    {"titan", NVML_BRAND_TITAN},
    {"nvidia_vapps", NVML_BRAND_NVIDIA_VAPPS},
    {"nvidia_vpc", NVML_BRAND_NVIDIA_VPC},
    {"nvidia_vcs", NVML_BRAND_NVIDIA_VCS},
    {"nvidia_vws", NVML_BRAND_NVIDIA_VWS},
    {"nvidia_cloud_gaming", NVML_BRAND_NVIDIA_CLOUD_GAMING},
    {"quadro_rtx", NVML_BRAND_QUADRO_RTX},
    {"nvidia_rtx", NVML_BRAND_NVIDIA_RTX},
    {"nvidia", NVML_BRAND_NVIDIA},
    {"geforce_rtx", NVML_BRAND_GEFORCE_RTX},
    {"titan_rtx", NVML_BRAND_TITAN_RTX},
};

// The names accepted for `architecture`, as NVML_DEVICE_ARCH_*.
struct ArchitectureName {
  const char* name;
  nvmlDeviceArchitecture_t architecture;
};
constexpr ArchitectureName kArchitectureNames[] = {
    {"kepler", NVML_DEVICE_ARCH_KEPLER},
    {"maxwell", NVML_DEVICE_ARCH_MAXWELL},
    {"pascal", NVML_DEVICE_ARCH_PASCAL},
    {"volta", NVML_DEVICE_ARCH_VOLTA},
    {"turing", NVML_DEVICE_ARCH_TURING},
    {"ampere", NVML_DEVICE_ARCH_AMPERE},
    {"ada", NVML_DEVICE_ARCH_ADA},
    {"hopper", NVML_DEVICE_ARCH_HOPPER},
    {"blackwell", NVML_DEVICE_ARCH_BLACKWELL},
    {"orin", NVML_DEVICE_ARCH_T23X},
    {"unknown", NVML_DEVICE_ARCH_UNKNOWN},
};

// The entry of `table` whose name is the string in `node`; throws
// FieldError listing every name otherwise.
template <typename Entry, size_t N>
const Entry& Lookup(const Entry (&table)[N], const YAML::Node& node,
                    const std::string& field, const char* what) {
  const std::string text = ParseString(node, field);
  std::string known;
  for (const Entry& entry : table) {
    if (text == entry.name) return entry;
    absl::StrAppend(&known, known.empty() ? "" : ", ", entry.name);
  }
  throw FieldError(
      LineOf(node), field,
      absl::StrCat("unknown ", what, " \"", text, "\" (", known, ")"));
}

bool IsHex(absl::string_view text, size_t length) {
  if (text.size() != length) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(c) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

// "GPU-" then 8-4-4-4-12 lower-case hex digits.
bool IsGpuUuid(absl::string_view uuid) {
  if (!absl::ConsumePrefix(&uuid, "GPU-")) return false;
  std::vector<absl::string_view> groups = absl::StrSplit(uuid, '-');
  constexpr size_t kLengths[] = {8, 4, 4, 4, 12};
  if (groups.size() != 5) return false;
  for (size_t i = 0; i < 5; ++i) {
    if (!IsHex(groups[i], kLengths[i])) return false;
  }
  return true;
}

}  // namespace

std::string ParseBoundedString(const YAML::Node& node, const std::string& field,
                               size_t max_length) {
  std::string value = ParseString(node, field);
  if (value.empty() || value.size() > max_length) {
    throw FieldError(LineOf(node), field,
                     absl::StrCat("must be 1 to ", max_length, " characters"));
  }
  return value;
}

PciAddress ParseBusId(const YAML::Node& node, const std::string& field) {
  std::optional<PciAddress> address = ParsePciAddress(ParseString(node, field));
  if (!address.has_value() || address->function != 0) {
    throw FieldError(LineOf(node), field,
                     "must be a PCI address DOMAIN:BUS:DEVICE.0 in hex, "
                     "e.g. \"0000:07:00.0\"");
  }
  return *address;
}

unsigned ParseMigMode(const YAML::Node& node, const std::string& field) {
  const std::string text = ParseString(node, field);
  if (text == "enabled") return NVML_DEVICE_MIG_ENABLE;
  if (text == "disabled") return NVML_DEVICE_MIG_DISABLE;
  throw FieldError(LineOf(node), field, "must be enabled or disabled");
}

void ParseComputeCapability(const YAML::Node& node, const std::string& field,
                            int* major, int* minor) {
  const std::string text = ParseString(node, field);
  std::vector<absl::string_view> parts = absl::StrSplit(text, '.');
  auto digits = [](absl::string_view text, size_t max_length) {
    if (text.empty() || text.size() > max_length) return false;
    for (char c : text) {
      if (!absl::ascii_isdigit(c)) return false;
    }
    return true;
  };
  if (parts.size() != 2 || !digits(parts[0], 2) || !digits(parts[1], 1) ||
      (parts[0].size() == 2 && parts[0][0] == '0')) {
    throw FieldError(LineOf(node), field,
                     "must be \"MAJOR.MINOR\", e.g. \"8.0\" or \"10.0\"");
  }
  *major = 0;
  for (char c : parts[0]) *major = *major * 10 + (c - '0');
  *minor = parts[1][0] - '0';
}

nvmlBrandType_t ParseBrand(const YAML::Node& node, const std::string& field) {
  return Lookup(kBrandNames, node, field, "brand").brand;
}

nvmlDeviceArchitecture_t ParseArchitecture(const YAML::Node& node,
                                           const std::string& field) {
  return Lookup(kArchitectureNames, node, field, "architecture").architecture;
}

std::string ParseGpuUuid(const YAML::Node& node, const std::string& field) {
  std::string uuid = ParseString(node, field);
  if (!IsGpuUuid(uuid)) {
    throw FieldError(LineOf(node), field,
                     "must look like GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx "
                     "(lower-case hex)");
  }
  return uuid;
}

unsigned long long ParseEvents(const YAML::Node& node,
                               const std::string& field) {
  unsigned long long mask = 0;
  std::vector<YAML::Node> items = ParseSequence(node, field);
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item_field = absl::StrCat(field, "[", i, "]");
    const std::string name = ParseString(items[i], item_field);
    const EventName* match = nullptr;
    for (const EventName& known : kEventNames) {
      if (name == known.name) match = &known;
    }
    if (match == nullptr) {
      std::string known_names;
      for (const EventName& known : kEventNames) {
        absl::StrAppend(&known_names, known_names.empty() ? "" : ", ",
                        known.name);
      }
      throw FieldError(
          LineOf(items[i]), item_field,
          absl::StrCat("unknown event \"", name, "\" (", known_names, ")"));
    }
    mask |= match->bit;
  }
  return mask;
}

}  // namespace gdp::fake_nvml
