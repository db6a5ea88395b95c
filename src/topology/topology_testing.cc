#include "topology/topology_testing.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <tuple>
#include <utility>

#include "absl/status/statusor.h"

namespace gdp {

Topology Make(int n) {
  absl::StatusOr<Topology> t = Topology::Create(n);
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.status().ToString().c_str());
    std::abort();
  }
  return *std::move(t);
}

Topology Dgx1() {
  Topology t = Make(8);
  const int links[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2},
                          {1, 2, 2}, {1, 3, 1}, {1, 5, 2}, {2, 3, 2},
                          {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                          {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
  for (const auto& l : links) t.SetNvLinks(l[0], l[1], l[2]);
  for (int a = 0; a < 8; ++a) {
    t.SetNumaNode(a, a / 4);
    for (int b = a + 1; b < 8; ++b) {
      t.SetPcie(a, b,
                a / 2 == b / 2   ? PcieLevel::kSingle
                : a / 4 == b / 4 ? PcieLevel::kHostBridge
                                 : PcieLevel::kSystem);
    }
  }
  return t;
}

Topology Dgx2() {
  Topology t = Make(16);
  for (int a = 0; a < 16; ++a) {
    t.SetNumaNode(a, a / 8);
    for (int b = a + 1; b < 16; ++b) {
      t.SetNvSwitchLinks(a, b, 6);
      t.SetPcie(a, b,
                a / 2 == b / 2   ? PcieLevel::kSingle
                : a / 4 == b / 4 ? PcieLevel::kMultiple
                : a / 8 == b / 8 ? PcieLevel::kNode
                                 : PcieLevel::kSystem);
    }
  }
  return t;
}

Topology HgxH100() {
  Topology t = Make(8);
  for (int a = 0; a < 8; ++a) {
    t.SetNumaNode(a, a / 4);
    for (int b = a + 1; b < 8; ++b) {
      t.SetNvSwitchLinks(a, b, 18);
      t.SetPcie(a, b, a / 4 == b / 4 ? PcieLevel::kNode : PcieLevel::kSystem);
    }
  }
  return t;
}

Topology Pcie4() {
  Topology t = Make(4);
  for (int a = 0; a < 4; ++a) {
    t.SetNumaNode(a, a / 2);
    for (int b = a + 1; b < 4; ++b) {
      t.SetPcie(a, b, a / 2 == b / 2 ? PcieLevel::kSingle : PcieLevel::kSystem);
    }
  }
  return t;
}

Topology RandomTopology(std::mt19937& rng, int n) {
  Topology t = Make(n);
  const PcieLevel levels[] = {PcieLevel::kInternal, PcieLevel::kSingle,
                              PcieLevel::kMultiple, PcieLevel::kHostBridge,
                              PcieLevel::kNode,     PcieLevel::kSystem};
  std::uniform_int_distribution<int> pct(0, 99);
  for (int a = 0; a < n; ++a) {
    t.SetNumaNode(a, std::uniform_int_distribution<int>(-1, 2)(rng));
    t.SetUsable(a, pct(rng) < 90);
    for (int b = a + 1; b < n; ++b) {
      if (pct(rng) < 30) t.SetNvLinks(a, b, 1 + pct(rng) % 2);
      if (pct(rng) < 10) t.SetNvSwitchLinks(a, b, 1);
      t.SetPcie(a, b, levels[pct(rng) % 6]);
    }
  }
  return t;
}

std::vector<int> BruteForce(const Topology& t, const std::vector<int>& avail,
                            const std::vector<int>& must, int size) {
  std::vector<int> usable;
  for (int g : avail) {
    if (t.Usable(g)) usable.push_back(g);
  }
  std::sort(usable.begin(), usable.end());
  const int n = static_cast<int>(usable.size());
  // Rank key: larger is better, lexicographically; the set itself last
  // (negated by comparing it in reverse).
  using Key = std::tuple<int, int64_t, int64_t, int>;
  std::vector<int> best;
  Key best_key;
  for (uint32_t mask = 0; mask < (uint32_t{1} << n); ++mask) {
    if (std::popcount(mask) != size) continue;
    std::vector<int> in, out;
    for (int i = 0; i < n; ++i) {
      ((mask >> i) & 1 ? in : out).push_back(usable[i]);
    }
    bool has_must = std::all_of(must.begin(), must.end(), [&](int g) {
      return std::find(in.begin(), in.end(), g) != in.end();
    });
    if (!has_must) continue;
    auto total = [&](const std::vector<int>& s) {
      int64_t sum = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        for (size_t j = i + 1; j < s.size(); ++j) {
          sum += t.PairScore(s[i], s[j]);
        }
      }
      return sum;
    };
    int linked = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      for (size_t j = i + 1; j < in.size(); ++j) {
        linked += t.NvLinked(in[i], in[j]) ? 1 : 0;
      }
    }
    std::set<int> nodes;
    for (int g : in) nodes.insert(t.NumaNode(g));
    const Key key{linked, total(out), total(in),
                  -static_cast<int>(nodes.size())};
    if (best.empty() || key > best_key || (key == best_key && in < best)) {
      best = in;
      best_key = key;
    }
  }
  return best;
}

}  // namespace gdp
