// Internal pieces of the machine loader: parsing one GPU or NVSwitch entry
// and the whole-machine consistency checks. Every function reports problems
// by throwing FieldError (see yaml_reader.h); LoadMachineFile catches it.
#ifndef GDP_FAKE_NVML_MACHINE_PARSE_H_
#define GDP_FAKE_NVML_MACHINE_PARSE_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "fake_nvml/machine.h"
#include "fake_nvml/yaml_reader.h"

namespace gdp::fake_nvml {

// Where the parts of one GPU entry are, for cross-entry messages.
struct GpuLines {
  int uuid = 1;
  int minor = 1;
  int bus_id = 1;
  int host_bridge = 1;
  int pcie_switches = 1;
  std::vector<int> nvlinks;  // one per link
};

// Where the parts of one NVSwitch entry are.
struct NvSwitchLines {
  int bus_id = 1;
};

// Parses the GPU entry `node` found at dotted path `path` ("gpus[3]") of a
// machine whose driver is `driver_version` (for defaults that depend on
// it). Checks everything local to the entry; references to other entries
// (NVLink peers) are range-checked later by CheckMachine.
Gpu ParseGpu(const YAML::Node& node, const std::string& path,
             absl::string_view driver_version, GpuLines* lines);

// Parses the NVSwitch entry `node` found at `path` ("nvswitches[1]").
NvSwitch ParseNvSwitch(const YAML::Node& node, const std::string& path,
                       NvSwitchLines* lines);

// Parses the optional `gpu_instances` list of a GPU entry (schema in
// README.md) whose name, UUID and MIG mode are already parsed, and lays the
// instances out: placements (given or found), GPU and compute instance IDs,
// MIG devices and their UUIDs. Sets gpu->mig_product for known products.
// Rejects instances on a GPU without MIG enabled or of an unknown product,
// unknown profiles, invalid or overlapping placements, more instances of a
// profile than fit, and sets that do not fit the GPU or GPU instance.
void ParseGpuInstances(YamlMap& map, Gpu* gpu);

// Parses the optional health fields of a GPU entry whose architecture is
// already known: remapped_rows, retired_pages_pending, pcie and
// throttle_reasons (schema in README.md), and sets their defaults (a GPU
// that remaps rows gets remapped_rows all zero; pcie at the
// architecture's generation, x16). Rejects remapped_rows before Ampere,
// retired_pages_pending from Ampere on, a PCIe generation outside 1-6 or
// width outside 1, 2, 4, 8, 16, 32, a current link above its maximum, and
// throttle reason bits NVML does not define.
void ParseGpuHealth(YamlMap& map, Gpu* gpu);

// Checks what spans entries: unique UUIDs, minors and bus ids; NVLink peers
// that exist, are not the GPU itself and link back as many times; each PCIe
// switch under one host bridge and upstream path; each host bridge in one
// NUMA node and one PCI domain. `gpu_lines` and `switch_lines` parallel the
// machine's lists.
void CheckMachine(const Machine& machine,
                  const std::vector<GpuLines>& gpu_lines,
                  const std::vector<NvSwitchLines>& switch_lines);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_MACHINE_PARSE_H_
