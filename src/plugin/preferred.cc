#include "plugin/preferred.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

struct NodeGroup {
  int numa_node = -1;
  int must_count = 0;
  std::vector<size_t> free;  // indexes into DeviceList::devices
};

}  // namespace

absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    const DeviceList& list, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
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
  absl::flat_hash_set<std::string> avail;
  for (const std::string& id : available) {
    if (list.Find(id) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown available device ID '", id, "'"));
    }
    if (!avail.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("available device ID '", id, "' is listed twice"));
    }
  }
  absl::flat_hash_set<std::string> must;
  std::map<int, NodeGroup> groups;
  for (const std::string& id : must_include) {
    if (!avail.contains(id)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "must-include device ID '", id, "' is not among the available"));
    }
    if (!must.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("must-include device ID '", id, "' is listed twice"));
    }
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

  const size_t need = size - must_include.size();
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
  std::sort(chosen.begin(), chosen.end());
  std::vector<std::string> out(must_include.begin(), must_include.end());
  for (size_t i : chosen) out.push_back(list.devices[i].id);
  return out;
}

}  // namespace gdp
