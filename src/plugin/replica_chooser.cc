#include "plugin/replica_chooser.h"

#include <algorithm>
#include <tuple>

#include "plugin/gpu_choice.h"

namespace gdp {
namespace {

// Packed weighs every way to pick its further units when there are at most
// this many; above, it falls back to the greedy rule.
constexpr long kMaxPackings = 20000;

// C(n, k), saturating above kMaxPackings.
long Combinations(int n, int k) {
  long c = 1;
  for (int i = 1; i <= k; ++i) {
    c = c * (n - k + i) / i;
    if (c > kMaxPackings) return kMaxPackings + 1;
  }
  return c;
}

}  // namespace

ReplicaChooser::ReplicaChooser(const DeviceList& list, const IdSet& avail,
                               const std::vector<std::string>& must_include,
                               const IdSet& must, const NodeTopology* topology)
    : topology_(topology) {
  absl::flat_hash_map<std::string, size_t> index;  // visible_id -> units_
  for (size_t i = 0; i < list.devices.size(); ++i) {
    const Device& d = list.devices[i];
    auto [it, added] = index.try_emplace(d.visible_id, units_.size());
    if (added) {
      units_.emplace_back();
      Unit& u = units_.back();
      u.first = i;
      u.numa_node = d.numa_node;
      if (topology_ != nullptr && d.mig_gi < 0) {
        u.position = topology_->Find(d.gpu_uuid);
      }
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
  if (topology_ != nullptr && !TopologyCovers()) topology_ = nullptr;
}

bool ReplicaChooser::TopologyCovers() const {
  std::vector<bool> seen(topology_->topology().num_gpus(), false);
  for (const Unit& u : units_) {
    if (u.in_answer == 0 && u.Free() == 0) continue;
    if (u.position < 0 || seen[u.position]) return false;
    seen[u.position] = true;
  }
  return true;
}

std::vector<size_t> ReplicaChooser::Distributed(int need) {
  if (topology_ != nullptr) PreferByTopology(need);
  for (; need > 0; --need) {
    Unit* best = nullptr;
    auto key = [this](const Unit& u) {
      // Topology's preference counts until each unit holds one device.
      return std::tuple(u.in_answer, u.in_answer == 0 && !u.preferred, u.Load(),
                        -Affinity(u), u.first);
    };
    for (Unit& u : units_) {
      if (u.Free() == 0) continue;
      if (best == nullptr || key(u) < key(*best)) best = &u;
    }
    Take(*best, 1);  // size <= available guarantees a free device
  }
  return chosen_;
}

void ReplicaChooser::PreferByTopology(int need) {
  // The units outside the answer that distributed takes one device from:
  // the `m` least loaded, where the last load tier may have more units
  // than places left; topology picks among that tier's units.
  std::vector<Unit*> outside, in_answer;
  for (Unit& u : units_) {
    if (u.in_answer > 0) {
      in_answer.push_back(&u);
    } else if (u.Free() > 0) {
      outside.push_back(&u);
    }
  }
  const int m = std::min<int>(need, static_cast<int>(outside.size()));
  if (m == 0) return;
  std::stable_sort(
      outside.begin(), outside.end(),
      [](const Unit* a, const Unit* b) { return a->Load() < b->Load(); });
  // Units below the tier's load are all taken; the tier's units compete.
  const int limit = outside[m - 1]->Load();
  std::vector<int> available, must;
  for (Unit* u : in_answer) {
    available.push_back(u->position);
    must.push_back(u->position);
  }
  std::vector<Unit*> tier;
  for (Unit* u : outside) {
    if (u->Load() < limit) {
      u->preferred = true;
      available.push_back(u->position);
      must.push_back(u->position);
    } else if (u->Load() == limit) {
      tier.push_back(u);
      available.push_back(u->position);
    }
  }
  const int places = m - static_cast<int>(must.size() - in_answer.size());
  if (static_cast<int>(tier.size()) == places) {
    for (Unit* u : tier) u->preferred = true;
    return;
  }
  std::vector<int> chosen = ChooseGpus(topology_->topology(), available, must,
                                       static_cast<int>(must.size()) + places);
  for (Unit* u : tier) {
    u->preferred =
        std::binary_search(chosen.begin(), chosen.end(), u->position);
  }
}

std::vector<size_t> ReplicaChooser::Packed(int need) {
  // The units already in the answer cost no further unit: fill them first.
  for (Unit* u : Ordered([](const Unit& u) { return u.in_answer > 0; })) {
    if (need == 0) break;
    int n = std::min(need, u->Free());
    Take(*u, n);
    need -= n;
  }
  if (need == 0) return chosen_;
  auto outside = [](const Unit& u) { return u.in_answer == 0; };
  const int units = FewestUnits(Ordered(outside), nullptr, need);
  bool any_in_answer =
      std::any_of(units_.begin(), units_.end(),
                  [](const Unit& u) { return u.in_answer > 0; });
  // With one further unit and nothing in the answer yet, topology has no
  // pair to weigh.
  if (topology_ == nullptr || (units == 1 && !any_in_answer) ||
      !PackByTopology(need, units)) {
    PackGreedy(need, units);
  }
  return chosen_;
}

bool ReplicaChooser::PackByTopology(int need, int units) {
  std::vector<Unit*> rest =
      Ordered([](const Unit& u) { return u.in_answer == 0; });
  const int n = static_cast<int>(rest.size());
  if (Combinations(n, units) > kMaxPackings) return false;
  const Topology& t = topology_->topology();
  std::vector<int> base;  // positions of the units in the answer
  for (const Unit& u : units_) {
    if (u.in_answer > 0) base.push_back(u.position);
  }
  // A packing's rank: NVLinked pairs, pair score (over the answer's units
  // and the packing's), then the packing's load, then its fewest free
  // devices (tightest fit); the first found (Ordered order) among equals.
  using Rank = std::tuple<int, int64_t, int, int>;
  std::vector<int> pick, best;
  Rank best_rank;
  auto rank = [&] {
    std::vector<int> all = base;
    int load = 0, free = 0;
    for (int i : pick) {
      all.push_back(rest[i]->position);
      load += rest[i]->Load();
      free += rest[i]->Free();
    }
    int linked = 0;
    int64_t score = 0;
    for (size_t a = 0; a < all.size(); ++a) {
      for (size_t b = a + 1; b < all.size(); ++b) {
        linked += t.NvLinked(all[a], all[b]) ? 1 : 0;
        score += t.PairScore(all[a], all[b]);
      }
    }
    return Rank(linked, score, load, -free);
  };
  // Walks the sets of `units` units whose free devices cover `need`.
  auto walk = [&](auto& self, int from, int covered) -> void {
    if (static_cast<int>(pick.size()) == units) {
      if (covered < need) return;
      Rank r = rank();
      if (best.empty() || r > best_rank) {
        best = pick;
        best_rank = r;
      }
      return;
    }
    for (int i = from; i < n; ++i) {
      if (n - i < units - static_cast<int>(pick.size())) return;
      pick.push_back(i);
      self(self, i + 1, covered + rest[i]->Free());
      pick.pop_back();
    }
  };
  walk(walk, 0, 0);
  for (int i : best) {  // in Ordered order: most loaded filled first
    int take = std::min(need, rest[i]->Free());
    Take(*rest[i], take);
    need -= take;
  }
  return true;
}

void ReplicaChooser::PackGreedy(int need, int units) {
  auto outside = [](const Unit& u) { return u.in_answer == 0; };
  int units_left = units;
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
}

std::vector<ReplicaChooser::Unit*> ReplicaChooser::Ordered(
    const std::function<bool(const Unit&)>& keep) {
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

int ReplicaChooser::FewestUnits(const std::vector<Unit*>& units,
                                const Unit* skip, int need) {
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

void ReplicaChooser::Take(Unit& u, int n) {
  for (int k = 0; k < n; ++k) chosen_.push_back(u.free[u.next++]);
  u.in_answer += n;
  for (int k = 0; k < n; ++k) AddToNode(u.numa_node);
}

void ReplicaChooser::AddToNode(int numa_node) {
  if (numa_node >= 0) on_node_[numa_node]++;
}

int ReplicaChooser::Affinity(const Unit& u) const {
  auto it = on_node_.find(u.numa_node);
  return it == on_node_.end() ? 0 : it->second;
}

}  // namespace gdp
