#include "plugin/preferred.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

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

// One physical unit (GPU or MIG device) and its replicas.
struct Unit {
  size_t first = 0;  // list index of its first device: the tie-break order
  int numa_node = -1;
  int total = 0;             // its devices in the list
  int in_answer = 0;         // must-include and chosen devices
  std::vector<size_t> free;  // available, not must-include; list order
  size_t next = 0;           // free[next..] are not chosen yet

  int Free() const { return static_cast<int>(free.size() - next); }
  int Load() const { return total - Free(); }
};

// Chooses replicas unit by unit for one request (see the header).
class ReplicaChooser {
 public:
  ReplicaChooser(const DeviceList& list, const IdSet& avail,
                 const std::vector<std::string>& must_include,
                 const IdSet& must) {
    absl::flat_hash_map<std::string, size_t> index;  // visible_id -> units_
    for (size_t i = 0; i < list.devices.size(); ++i) {
      const Device& d = list.devices[i];
      auto [it, added] = index.try_emplace(d.visible_id, units_.size());
      if (added) {
        units_.emplace_back();
        units_.back().first = i;
        units_.back().numa_node = d.numa_node;
      }
      Unit& u = units_[it->second];
      u.total++;
      if (avail.contains(d.id) && !must.contains(d.id)) u.free.push_back(i);
    }
    for (const std::string& id : must_include) {
      const Device* d = list.Find(id);
      units_[index.at(d->visible_id)].in_answer++;
      AddToNode(d->numa_node);
    }
  }

  std::vector<size_t> Distributed(int need) {
    for (; need > 0; --need) {
      Unit* best = nullptr;
      for (Unit& u : units_) {
        if (u.Free() == 0) continue;
        if (best == nullptr ||
            std::tuple(u.in_answer, u.Load(), -Affinity(u), u.first) <
                std::tuple(best->in_answer, best->Load(), -Affinity(*best),
                           best->first)) {
          best = &u;
        }
      }
      Take(*best, 1);  // size <= available guarantees a free device
    }
    return chosen_;
  }

  std::vector<size_t> Packed(int need) {
    // The units already in the answer cost no further unit: fill them first.
    for (Unit* u : Ordered([](const Unit& u) { return u.in_answer > 0; })) {
      if (need == 0) break;
      int n = std::min(need, u->Free());
      Take(*u, n);
      need -= n;
    }
    auto outside = [](const Unit& u) { return u.in_answer == 0; };
    int units_left = FewestUnits(Ordered(outside), nullptr, need);
    while (need > 0) {
      // The most loaded unit that keeps the fewest units possible. The unit
      // with the most free devices always does, so `pick` is found.
      std::vector<Unit*> rest = Ordered(outside);
      Unit* pick = rest.front();
      for (Unit* u : rest) {
        int left = need - std::min(need, u->Free());
        if (left == 0 || FewestUnits(rest, u, left) <= units_left - 1) {
          pick = u;
          break;
        }
      }
      int take = std::min(need, pick->Free());
      Take(*pick, take);
      need -= take;
      units_left--;
    }
    return chosen_;
  }

 private:
  // Units with free devices that pass `keep`, most loaded first (packed's
  // preference), then by NUMA affinity and list order.
  std::vector<Unit*> Ordered(const std::function<bool(const Unit&)>& keep) {
    std::vector<Unit*> out;
    for (Unit& u : units_) {
      if (u.Free() > 0 && keep(u)) out.push_back(&u);
    }
    std::sort(out.begin(), out.end(), [this](const Unit* a, const Unit* b) {
      return std::tuple(-a->Load(), a->Free(), -Affinity(*a), a->first) <
             std::tuple(-b->Load(), b->Free(), -Affinity(*b), b->first);
    });
    return out;
  }

  // The fewest units of `units` other than `skip` whose free devices add
  // up to `need`; more than units.size() when they cannot.
  static int FewestUnits(const std::vector<Unit*>& units, const Unit* skip,
                         int need) {
    std::vector<int> frees;
    for (const Unit* u : units) {
      if (u != skip) frees.push_back(u->Free());
    }
    std::sort(frees.rbegin(), frees.rend());
    int count = 0;
    for (int f : frees) {
      if (need <= 0) break;
      need -= f;
      count++;
    }
    return need <= 0 ? count : static_cast<int>(units.size()) + 1;
  }

  void Take(Unit& u, int n) {
    for (int k = 0; k < n; ++k) chosen_.push_back(u.free[u.next++]);
    u.in_answer += n;
    for (int k = 0; k < n; ++k) AddToNode(u.numa_node);
  }

  void AddToNode(int numa_node) {
    if (numa_node >= 0) on_node_[numa_node]++;
  }

  // How many devices of the answer so far share u's NUMA node.
  int Affinity(const Unit& u) const {
    auto it = on_node_.find(u.numa_node);
    return it == on_node_.end() ? 0 : it->second;
  }

  std::vector<Unit> units_;
  absl::flat_hash_map<int, int> on_node_;  // NUMA node -> answer devices
  std::vector<size_t> chosen_;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    const DeviceList& list, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size,
    SharedAllocationPolicy policy) {
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
          absl::StrCat("unknown available device ID '", id, "'"));
    }
    if (!avail.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("available device ID '", id, "' is listed twice"));
    }
    replicas = replicas || d->replica >= 0;
  }
  IdSet must;
  for (const std::string& id : must_include) {
    if (!avail.contains(id)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "must-include device ID '", id, "' is not among the available"));
    }
    if (!must.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("must-include device ID '", id, "' is listed twice"));
    }
  }

  const int need = size - static_cast<int>(must_include.size());
  std::vector<size_t> chosen;
  if (!replicas) {
    chosen = ChooseByNuma(list, avail, must_include, must, need);
  } else {
    ReplicaChooser chooser(list, avail, must_include, must);
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
