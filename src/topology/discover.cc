#include "topology/discover.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "util/logging.h"

namespace gdp {
namespace {

// sysfs form, as GpuInfo::pci_bus_id.
std::string BusId(const NvmlPci& pci) {
  return absl::StrFormat("%04x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
}

// The end of a GPU's link list: no NVLink, past its last link, or no
// entry point.
bool EndOfLinks(const absl::Status& s) {
  nvmlReturn_t code = NvmlCode(s);
  return code == NVML_ERROR_NOT_SUPPORTED ||
         code == NVML_ERROR_INVALID_ARGUMENT ||
         code == NVML_ERROR_FUNCTION_NOT_FOUND;
}

}  // namespace

Topology DiscoverTopology(const Nvml& nvml, const NodeGpus& node) {
  const int n = static_cast<int>(node.gpus.size());
  Topology t = *Topology::Create(std::min(n, Topology::kMaxGpus));
  const int m = t.num_gpus();
  std::vector<nvmlDevice_t> handles(m, nullptr);
  absl::flat_hash_map<std::string, int> by_bus;
  for (int i = 0; i < m; ++i) {
    const GpuInfo& g = node.gpus[i];
    by_bus[g.pci_bus_id] = i;
    t.SetNumaNode(i, g.numa_node);
    absl::StatusOr<nvmlDevice_t> h = nvml.DeviceByUuid(g.uuid);
    if (!h.ok()) {
      LOG_WARN("Topology: leaving GPU {} ({}) out of choices: {}", g.index,
               g.uuid, h.status().message());
      t.SetUsable(i, false);
      continue;
    }
    handles[i] = *h;
  }
  std::vector<int> switch_links(m, 0);
  std::vector<std::vector<int>> links(m, std::vector<int>(m, 0));
  for (int i = 0; i < m; ++i) {
    if (!t.Usable(i)) continue;
    auto leave_out = [&](unsigned link, const absl::Status& s) {
      LOG_WARN("Topology: leaving GPU {} ({}) out of choices: NVLink {}: {}",
               node.gpus[i].index, node.gpus[i].uuid, link, s.message());
      t.SetUsable(i, false);
    };
    for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; ++l) {
      absl::StatusOr<bool> active = nvml.NvLinkActive(handles[i], l);
      if (!active.ok()) {
        if (!EndOfLinks(active.status())) leave_out(l, active.status());
        break;
      }
      if (!*active) continue;
      absl::StatusOr<NvmlNvLinkPeer> peer = nvml.NvLinkPeer(handles[i], l);
      if (!peer.ok()) {
        leave_out(l, peer.status());
        break;
      }
      if (peer->type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
        ++switch_links[i];
      } else if (auto it = by_bus.find(BusId(peer->pci));
                 it != by_bus.end() && it->second != i) {
        ++links[i][it->second];
      }
    }
  }
  for (int i = 0; i < m; ++i) {
    for (int j = i + 1; j < m; ++j) {
      t.SetNvLinks(i, j, std::min(links[i][j], links[j][i]));
      t.SetNvSwitchLinks(i, j, std::min(switch_links[i], switch_links[j]));
      if (handles[i] == nullptr || handles[j] == nullptr) continue;
      absl::StatusOr<nvmlGpuTopologyLevel_t> level =
          nvml.CommonAncestor(handles[i], handles[j]);
      if (level.ok()) {
        t.SetPcie(i, j, static_cast<PcieLevel>(*level));
      } else if (NvmlCode(level.status()) != NVML_ERROR_FUNCTION_NOT_FOUND) {
        VLOG(1, "Topology: GPUs {} and {}: {}", node.gpus[i].index,
             node.gpus[j].index, level.status().message());
      }
    }
  }
  return t;
}

NodeTopology DiscoverNodeTopology(const Nvml& nvml, const NodeGpus& node) {
  Topology t = DiscoverTopology(nvml, node);
  std::vector<std::string> uuids;
  for (int i = 0; i < t.num_gpus(); ++i) uuids.push_back(node.gpus[i].uuid);
  return NodeTopology(std::move(t), std::move(uuids));
}

}  // namespace gdp
