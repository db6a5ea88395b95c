// Parsers for the single-value fields of a machine file that need more than
// a plain string or integer. Each throws FieldError naming `field` and the
// node's line when the value is malformed (see yaml_reader.h).
#ifndef GDP_FAKE_NVML_MACHINE_FIELDS_H_
#define GDP_FAKE_NVML_MACHINE_FIELDS_H_

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>

#include "fake_nvml/machine.h"

namespace gdp::fake_nvml {

// A string of 1 to `max_length` characters.
std::string ParseBoundedString(const YAML::Node& node, const std::string& field,
                               size_t max_length);

// "GPU-" followed by 8-4-4-4-12 lower-case hexadecimal digits.
std::string ParseGpuUuid(const YAML::Node& node, const std::string& field);

// A PCI address of function 0 in any form ParsePciAddress accepts.
PciAddress ParseBusId(const YAML::Node& node, const std::string& field);

// "enabled" or "disabled", as NVML_DEVICE_MIG_ENABLE / _DISABLE.
unsigned ParseMigMode(const YAML::Node& node, const std::string& field);

// "MAJOR.MINOR": a major of one or two digits and a one-digit minor, e.g.
// "8.0" or "10.0".
void ParseComputeCapability(const YAML::Node& node, const std::string& field,
                            int* major, int* minor);

// A brand name as NVML_BRAND_*: the enumerator's name after NVML_BRAND_, in
// lower case ("tesla", "nvidia", "geforce_rtx", ...; see README.md).
nvmlBrandType_t ParseBrand(const YAML::Node& node, const std::string& field);

// An architecture name as NVML_DEVICE_ARCH_*: kepler, maxwell, pascal,
// volta, turing, ampere, ada, hopper, blackwell, orin (T23X) or unknown.
nvmlDeviceArchitecture_t ParseArchitecture(const YAML::Node& node,
                                           const std::string& field);

// A list of event names (xid, single_bit_ecc, double_bit_ecc, pstate,
// clock, power_source_change, mig_config_change, single_bit_ecc_storm,
// dram_retirement, dram_retirement_failure, non_fatal_poison, fatal_poison,
// gpu_unavailable, gpu_recovery_action) as a mask of nvmlEventType bits.
unsigned long long ParseEvents(const YAML::Node& node,
                               const std::string& field);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_MACHINE_FIELDS_H_
