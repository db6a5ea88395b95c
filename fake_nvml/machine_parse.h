// Internal pieces of the machine loader: parsing one GPU or NVSwitch entry
// and the whole-machine consistency checks. Every function reports problems
// by throwing FieldError (see yaml_reader.h); LoadMachineFile catches it.
#ifndef GDP_FAKE_NVML_MACHINE_PARSE_H_
#define GDP_FAKE_NVML_MACHINE_PARSE_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "fake_nvml/machine.h"

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

// Parses the GPU entry `node` found at dotted path `path` ("gpus[3]").
// Checks everything local to the entry; references to other entries (NVLink
// peers) are range-checked later by CheckMachine.
Gpu ParseGpu(const YAML::Node& node, const std::string& path, GpuLines* lines);

// Parses the NVSwitch entry `node` found at `path` ("nvswitches[1]").
NvSwitch ParseNvSwitch(const YAML::Node& node, const std::string& path,
                       NvSwitchLines* lines);

// Checks what spans entries: unique UUIDs, minors and bus ids; NVLink peers
// that exist, are not the GPU itself and link back as many times; each PCIe
// switch under one host bridge and upstream path; each host bridge in one
// NUMA node. `gpu_lines` and `switch_lines` parallel the machine's lists.
void CheckMachine(const Machine& machine,
                  const std::vector<GpuLines>& gpu_lines,
                  const std::vector<NvSwitchLines>& switch_lines);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_MACHINE_PARSE_H_
