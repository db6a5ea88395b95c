#include "plugin/preferred.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "plugin/gpu_choice.h"
#include "plugin/replica_chooser.h"
#include "util/quote.h"

namespace gdp {
namespace {

using IdSet = absl::flat_hash_set<std::string>;

struct NodeGroup {
  int numa_node = -1;
  int must_count = 0;
  std::vector<size_t> free;  // indexes into DeviceList::devices
};

// Whole devices: `need` free devices, packed onto as few NUMA nodes as
// possible (see the header). Returns indexes into list.devices.
std::vector<size_t> ChooseByNuma(const DeviceList& list, const IdSet& avail,
                                 const std::vector<std::string>& must_include,
                                 const IdSet& must, size_t need) {
  std::map<int, NodeGroup> groups;
  for (const std::string& id : must_include) {
    int node = list.Find(id)->numa_node;
    NodeGroup& g = groups[node];
    g.numa_node = node;
    g.must_count++;
  }
  for (size_t i = 0; i < list.devices.size(); ++i) {
    const Device& d = list.devices[i];
    if (avail.contains(d.id) && !must.contains(d.id)) {
      NodeGroup& g = groups[d.numa_node];
      g.numa_node = d.numa_node;
      g.free.push_back(i);
    }
  }

  std::vector<NodeGroup*> order;
  for (auto& [node, g] : groups) order.push_back(&g);
  auto key = [need](const NodeGroup* g) {
    bool fits = g->free.size() >= need;
    long fit_rank = fits ? static_cast<long>(g->free.size())
                         : -static_cast<long>(g->free.size());
    return std::tuple(-g->must_count, !fits, fit_rank, g->numa_node);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](auto* a, auto* b) { return key(a) < key(b); });

  std::vector<size_t> chosen;
  for (NodeGroup* g : order) {
    for (size_t i : g->free) {
      if (chosen.size() == need) break;
      chosen.push_back(i);
    }
  }
  return chosen;
}

// Whole GPUs by topology: the positions of the available devices, or false
// when one of them is not a whole GPU the topology knows (then NUMA
// decides).
bool Positions(const DeviceList& list, const NodeTopology& topology,
               const IdSet& avail, std::vector<int>* positions,
               std::vector<size_t>* by_position) {
  by_position->assign(topology.topology().num_gpus(), SIZE_MAX);
  for (size_t i = 0; i < list.devices.size(); ++i) {
    const Device& d = list.devices[i];
    if (!avail.contains(d.id)) continue;
    const int p = d.mig_gi < 0 ? topology.Find(d.gpu_uuid) : -1;
    if (p < 0 || (*by_position)[p] != SIZE_MAX) return false;
    (*by_position)[p] = i;
    positions->push_back(p);
  }
  return true;
}

// Whole devices by topology (see ChooseGpus); std::nullopt when the
// topology does not cover them. Returns indexes into list.devices, not
// including must_include.
std::optional<std::vector<size_t>> ChooseByTopology(
    const DeviceList& list, const NodeTopology& topology, const IdSet& avail,
    const std::vector<std::string>& must_include, const IdSet& must, int size) {
  std::vector<int> available;
  std::vector<size_t> by_position;
  if (!Positions(list, topology, avail, &available, &by_position)) {
    return std::nullopt;
  }
  std::vector<int> forced;
  for (const std::string& id : must_include) {
    forced.push_back(topology.Find(list.Find(id)->gpu_uuid));
  }
  std::vector<size_t> out;
  for (int p : ChooseGpus(topology.topology(), available, forced, size)) {
    if (!must.contains(list.devices[by_position[p]].id)) {
      out.push_back(by_position[p]);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    const DeviceList& list, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size,
    SharedAllocationPolicy policy, const NodeTopology* topology) {
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation_size must be at least 1, got ", size));
  }
  if (static_cast<size_t>(size) > available.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("allocation_size ", size, " exceeds the ",
                     available.size(), " available devices"));
  }
  if (must_include.size() > static_cast<size_t>(size)) {
    return absl::InvalidArgumentError(
        absl::StrCat(must_include.size(),
                     " must-include devices exceed allocation_size ", size));
  }
  IdSet avail;
  bool replicas = false;
  for (const std::string& id : available) {
    const Device* d = list.Find(id);
    if (d == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown available device ID ", Quote(id)));
    }
    if (!avail.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("available device ID ", Quote(id), " is listed twice"));
    }
    replicas = replicas || d->replica >= 0;
  }
  IdSet must;
  for (const std::string& id : must_include) {
    if (!avail.contains(id)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "must-include device ID ", Quote(id), " is not among the available"));
    }
    if (!must.insert(id).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "must-include device ID ", Quote(id), " is listed twice"));
    }
  }

  const int need = size - static_cast<int>(must_include.size());
  std::vector<size_t> chosen;
  if (!replicas) {
    std::optional<std::vector<size_t>> by_topology;
    if (topology != nullptr) {
      by_topology =
          ChooseByTopology(list, *topology, avail, must_include, must, size);
    }
    chosen = by_topology.has_value()
                 ? *std::move(by_topology)
                 : ChooseByNuma(list, avail, must_include, must, need);
  } else {
    ReplicaChooser chooser(list, avail, must_include, must, topology);
    chosen = policy == SharedAllocationPolicy::kPacked
                 ? chooser.Packed(need)
                 : chooser.Distributed(need);
  }
  std::sort(chosen.begin(), chosen.end());
  std::vector<std::string> out(must_include.begin(), must_include.end());
  for (size_t i : chosen) out.push_back(list.devices[i].id);
  return out;
}

}  // namespace gdp
