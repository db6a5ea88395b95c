// CheckMachine: the consistency rules that span several entries of a
// machine file.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "fake_nvml/machine_parse.h"
#include "fake_nvml/yaml_reader.h"

namespace gdp::fake_nvml {
namespace {

std::string GpuField(size_t index, absl::string_view key) {
  return absl::StrCat("gpus[", index, "].", key);
}

void CheckUnique(const Machine& machine, const std::vector<GpuLines>& lines,
                 const std::vector<NvSwitchLines>& switch_lines) {
  absl::flat_hash_map<std::string, size_t> uuids;
  absl::flat_hash_map<unsigned, size_t> minors;
  absl::flat_hash_map<std::string, std::string> bus_ids;
  for (size_t i = 0; i < machine.gpus.size(); ++i) {
    const Gpu& gpu = machine.gpus[i];
    if (auto [it, added] = uuids.try_emplace(gpu.uuid, i); !added) {
      throw FieldError(lines[i].uuid, GpuField(i, "uuid"),
                       absl::StrCat("duplicate UUID ", gpu.uuid, " (also gpus[",
                                    it->second, "])"));
    }
    if (auto [it, added] = minors.try_emplace(gpu.minor, i); !added) {
      throw FieldError(lines[i].minor, GpuField(i, "minor"),
                       absl::StrCat("duplicate minor ", gpu.minor,
                                    " (also gpus[", it->second, "])"));
    }
    const std::string owner = absl::StrCat("gpus[", i, "]");
    if (auto [it, added] = bus_ids.try_emplace(FormatBusId(gpu.pci), owner);
        !added) {
      throw FieldError(lines[i].bus_id, GpuField(i, "bus_id"),
                       absl::StrCat("duplicate bus id ", it->first, " (also ",
                                    it->second, ")"));
    }
  }
  for (size_t s = 0; s < machine.nvswitches.size(); ++s) {
    const std::string owner = absl::StrCat("nvswitches[", s, "]");
    if (auto [it, added] =
            bus_ids.try_emplace(FormatBusId(machine.nvswitches[s].pci), owner);
        !added) {
      throw FieldError(switch_lines[s].bus_id, owner + ".bus_id",
                       absl::StrCat("duplicate bus id ", it->first, " (also ",
                                    it->second, ")"));
    }
  }
}

void CheckNvLinks(const Machine& machine, const std::vector<GpuLines>& lines) {
  const size_t count = machine.gpus.size();
  // links[{a, b}]: number of links from GPU a to GPU b.
  std::map<std::pair<size_t, size_t>, int> links;
  for (size_t i = 0; i < count; ++i) {
    const std::vector<NvLink>& nvlinks = machine.gpus[i].nvlinks;
    for (size_t l = 0; l < nvlinks.size(); ++l) {
      const NvLink& link = nvlinks[l];
      const std::string field = GpuField(i, absl::StrCat("nvlinks[", l, "]"));
      if (link.peer_kind == LinkPeer::kNvSwitch) {
        if (link.peer >= machine.nvswitches.size()) {
          throw FieldError(lines[i].nvlinks[l], field + ".peer_switch",
                           absl::StrCat("no NVSwitch with index ", link.peer));
        }
        continue;
      }
      if (link.peer >= count || link.peer == i) {
        throw FieldError(lines[i].nvlinks[l], field + ".peer_gpu",
                         link.peer == i
                             ? std::string("a GPU cannot link to itself")
                             : absl::StrCat("no GPU with index ", link.peer));
      }
      ++links[{i, link.peer}];
    }
  }
  for (const auto& [pair, n] : links) {
    const auto back = links.find({pair.second, pair.first});
    const int m = back == links.end() ? 0 : back->second;
    if (n == m) continue;
    size_t first = 0;
    const std::vector<NvLink>& nvlinks = machine.gpus[pair.first].nvlinks;
    while (nvlinks[first].peer_kind != LinkPeer::kGpu ||
           nvlinks[first].peer != pair.second) {
      ++first;
    }
    throw FieldError(
        lines[pair.first].nvlinks[first],
        GpuField(pair.first, absl::StrCat("nvlinks[", first, "].peer_gpu")),
        absl::StrCat("GPU ", pair.first, " has ", n, " link(s) to GPU ",
                     pair.second, " but GPU ", pair.second, " has ", m,
                     " back"));
  }
}

void CheckPcie(const Machine& machine, const std::vector<GpuLines>& lines) {
  absl::flat_hash_map<unsigned, int> bridge_numa;
  absl::flat_hash_map<unsigned, uint32_t> bridge_domain;
  // Switch id -> its host bridge followed by the switches above it.
  absl::flat_hash_map<unsigned, std::vector<unsigned>> switch_parents;
  for (size_t i = 0; i < machine.gpus.size(); ++i) {
    const Gpu& gpu = machine.gpus[i];
    auto [bridge, added] =
        bridge_numa.try_emplace(gpu.host_bridge, gpu.numa_node);
    if (!added && bridge->second != gpu.numa_node) {
      throw FieldError(
          lines[i].host_bridge, GpuField(i, "host_bridge"),
          absl::StrCat("host bridge ", gpu.host_bridge, " is on NUMA node ",
                       bridge->second, " for another GPU"));
    }
    auto [domain, new_domain] =
        bridge_domain.try_emplace(gpu.host_bridge, gpu.pci.domain);
    if (!new_domain && domain->second != gpu.pci.domain) {
      throw FieldError(
          lines[i].host_bridge, GpuField(i, "host_bridge"),
          absl::StrCat("host bridge ", gpu.host_bridge, " is in PCI domain ",
                       absl::Hex(domain->second, absl::kZeroPad4),
                       " for another GPU"));
    }
    for (size_t a = 0; a < gpu.pcie_switches.size(); ++a) {
      for (size_t b = a + 1; b < gpu.pcie_switches.size(); ++b) {
        if (gpu.pcie_switches[a] == gpu.pcie_switches[b]) {
          throw FieldError(lines[i].pcie_switches, GpuField(i, "pcie_switches"),
                           "a PCIe switch appears twice in one path");
        }
      }
    }
    std::vector<unsigned> parents = {gpu.host_bridge};
    for (unsigned id : gpu.pcie_switches) {
      auto [it, first] = switch_parents.try_emplace(id, parents);
      if (!first && it->second != parents) {
        throw FieldError(lines[i].pcie_switches, GpuField(i, "pcie_switches"),
                         absl::StrCat("PCIe switch ", id,
                                      " has a different host bridge or "
                                      "upstream switches for another GPU"));
      }
      parents.push_back(id);
    }
  }
}

}  // namespace

void CheckMachine(const Machine& machine,
                  const std::vector<GpuLines>& gpu_lines,
                  const std::vector<NvSwitchLines>& switch_lines) {
  CheckUnique(machine, gpu_lines, switch_lines);
  CheckNvLinks(machine, gpu_lines);
  CheckPcie(machine, gpu_lines);
}

}  // namespace gdp::fake_nvml
