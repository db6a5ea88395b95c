#include "topology/choose.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/topology.h"
#include "topology/topology_testing.h"

namespace gdp {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// For many seeded availability and must-include sets and every size,
// Choose must equal the brute force.
void CompareWithBruteForce(const Topology& t, std::mt19937& rng, int trials) {
  const int n = t.num_gpus();
  std::uniform_int_distribution<int> pct(0, 99);
  for (int trial = 0; trial < trials; ++trial) {
    const int keep = trial == 0 ? 100 : 30 + pct(rng) % 71;
    std::vector<int> avail;
    for (int g = 0; g < n; ++g) {
      if (pct(rng) < keep) avail.push_back(g);
    }
    std::shuffle(avail.begin(), avail.end(), rng);
    std::vector<int> usable;
    for (int g : avail) {
      if (t.Usable(g)) usable.push_back(g);
    }
    for (int size = 1; size <= static_cast<int>(usable.size()); ++size) {
      std::vector<int> must = usable;
      std::shuffle(must.begin(), must.end(), rng);
      must.resize(std::min<int>(size, pct(rng) % 4));
      SCOPED_TRACE("available {" + absl::StrJoin(avail, ",") + "} must {" +
                   absl::StrJoin(must, ",") + "} size " + std::to_string(size));
      absl::StatusOr<std::vector<int>> got = Choose(t, avail, must, size);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(*got, BruteForce(t, avail, must, size));
    }
  }
}

TEST(ChooseTest, MatchesBruteForceOnDgx1) {
  std::mt19937 rng(1);
  CompareWithBruteForce(Dgx1(), rng, 300);
}

TEST(ChooseTest, MatchesBruteForceOnDgx2) {
  std::mt19937 rng(2);
  CompareWithBruteForce(Dgx2(), rng, 12);
}

TEST(ChooseTest, MatchesBruteForceOnHgxH100) {
  std::mt19937 rng(3);
  CompareWithBruteForce(HgxH100(), rng, 200);
}

TEST(ChooseTest, MatchesBruteForceOnPcie4) {
  std::mt19937 rng(4);
  CompareWithBruteForce(Pcie4(), rng, 200);
}

TEST(ChooseTest, MatchesBruteForceOnRandomTopologies) {
  std::mt19937 rng(5);
  for (int i = 0; i < 150; ++i) {
    const int n = 1 + static_cast<int>(rng() % 12);
    SCOPED_TRACE("random topology " + std::to_string(i));
    CompareWithBruteForce(RandomTopology(rng, n), rng, 4);
  }
}

TEST(ChooseTest, MatchesBruteForceOnRandomSixteen) {
  std::mt19937 rng(6);
  for (int i = 0; i < 3; ++i) {
    CompareWithBruteForce(RandomTopology(rng, 16), rng, 2);
  }
}

// Fragmentation on a DGX-1: random sequences of 1-, 2- and 4-GPU pods
// arriving and leaving, where 1- and 2-GPU pods never hold more than 4
// GPUs together and at most one 4-GPU pod runs at a time. Then a fully
// NVLinked quad could always have been kept free (all small pods in one
// quad), and every 4-GPU pod must get one: {0,1,2,3} or {4,5,6,7}.
TEST(ChooseTest, KeepsNvLinkQuadsForFourGpuPods) {
  const Topology t = Dgx1();
  const std::vector<int> quad_a = {0, 1, 2, 3}, quad_b = {4, 5, 6, 7};
  std::mt19937 rng(8);
  int quads_placed = 0;
  for (int run = 0; run < 200; ++run) {
    std::vector<std::vector<int>> pods;
    std::vector<bool> used(8, false);
    std::string history;
    for (int step = 0; step < 40; ++step) {
      int small = 0;
      bool has_quad = false;
      for (const auto& p : pods) {
        if (p.size() == 4) {
          has_quad = true;
        } else {
          small += static_cast<int>(p.size());
        }
      }
      const int sizes[] = {1, 2, 4};
      const int size = sizes[rng() % 3];
      const bool fits = size == 4 ? !has_quad : small + size <= 4;
      if (!fits || (rng() % 3 == 0 && !pods.empty())) {
        if (pods.empty()) continue;
        const size_t victim = rng() % pods.size();
        for (int g : pods[victim]) used[g] = false;
        history += " -{" + absl::StrJoin(pods[victim], ",") + "}";
        pods.erase(pods.begin() + static_cast<long>(victim));
        continue;
      }
      std::vector<int> free;
      for (int g = 0; g < 8; ++g) {
        if (!used[g]) free.push_back(g);
      }
      absl::StatusOr<std::vector<int>> got = Choose(t, free, {}, size);
      ASSERT_TRUE(got.ok()) << got.status() << history;
      history += " +{" + absl::StrJoin(*got, ",") + "}";
      if (size == 4) {
        ASSERT_TRUE(*got == quad_a || *got == quad_b) << history;
        ++quads_placed;
      }
      for (int g : *got) used[g] = true;
      pods.push_back(*got);
    }
  }
  EXPECT_GT(quads_placed, 500);
}

struct Case {
  std::string name;
  Topology topology;
  std::vector<int> available;
  std::vector<int> must_include;
  int size;
  std::vector<int> want;
};

TEST(ChooseTest, TieBreaks) {
  Topology dgx1_without_3 = Dgx1();
  dgx1_without_3.SetUsable(3, false);
  // Pairs {0,1} and {2,3} score 30 each (host bridge across NUMA nodes,
  // and NUMA-local pair with its bonus); all else 0.
  Topology numa_tie = Make(4);
  numa_tie.SetNumaNode(0, 0);
  numa_tie.SetNumaNode(1, 1);
  numa_tie.SetNumaNode(2, 2);
  numa_tie.SetNumaNode(3, 2);
  numa_tie.SetPcie(0, 1, PcieLevel::kHostBridge);
  numa_tie.SetPcie(2, 3, PcieLevel::kNode);
  const std::vector<int> all8 = {0, 1, 2, 3, 4, 5, 6, 7};
  const Case cases[] = {
      // Any GPU of 0-3 would break the free fully linked quad; 4 does not.
      {"one gpu keeps the quad", Dgx1(), {0, 1, 2, 3, 4}, {}, 1, {4}},
      // Double NVLink behind one PCIe switch: (2,3) and (6,7) tie; the
      // rest is as good either way, so the lower set wins.
      {"two gpus", Dgx1(), all8, {}, 2, {2, 3}},
      {"two gpus near must", Dgx1(), all8, {5}, 2, {5, 6}},
      {"quad", Dgx1(), all8, {}, 4, {0, 1, 2, 3}},
      {"quad with must", Dgx1(), all8, {6}, 4, {4, 5, 6, 7}},
      {"quad with a lost gpu", dgx1_without_3, all8, {}, 4, {4, 5, 6, 7}},
      {"numa breaks a tie", numa_tie, {0, 1, 2, 3}, {}, 2, {2, 3}},
      {"pcie switch pair", Pcie4(), {0, 1, 2, 3}, {}, 2, {0, 1}},
      {"pcie leaves the pair", Pcie4(), {0, 2, 3}, {}, 1, {0}},
      {"nvswitch numa", HgxH100(), {3, 4, 5, 6, 7}, {}, 4, {4, 5, 6, 7}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::vector<int>> got =
        Choose(c.topology, c.available, c.must_include, c.size);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_THAT(*got, ElementsAreArray(c.want));
    EXPECT_EQ(*got,
              BruteForce(c.topology, c.available, c.must_include, c.size));
  }
}

TEST(ChooseTest, Errors) {
  Topology t = Dgx1();
  t.SetUsable(7, false);
  const struct {
    std::vector<int> available, must_include;
    int size;
    std::string message;
  } cases[] = {
      {{0, 1}, {}, 0, "allocation size 0 must be at least 1"},
      {{0, 1}, {}, 3, "allocation size 3 exceeds the 2 usable"},
      {{0, 7}, {}, 2, "allocation size 2 exceeds the 1 usable"},
      {{0, 8}, {}, 1, "available GPU 8 is not in the topology"},
      {{0, -1}, {}, 1, "available GPU -1 is not in the topology"},
      {{0, 0}, {}, 1, "available GPU 0 is listed twice"},
      {{0, 1}, {2}, 1, "must-include GPU 2 is not available"},
      {{0, 1}, {9}, 1, "must-include GPU 9 is not in the topology"},
      {{0, 1}, {1, 1}, 2, "must-include GPU 1 is listed twice"},
      {{0, 7}, {7}, 1, "must-include GPU 7 is not usable"},
      {{0, 1, 2}, {0, 1}, 1, "2 must-include GPUs exceed allocation size 1"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<std::vector<int>> got =
        Choose(t, c.available, c.must_include, c.size);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument)
        << c.message;
    EXPECT_THAT(got.status().message(), HasSubstr(c.message));
  }
}

// Above kChooseExactLimit: valid, deterministic, and it finds an island.
TEST(ChooseTest, HeuristicAboveExactLimit) {
  // 32 GPUs in 4 NVSwitch islands of 8, islands meet over PCIe only.
  Topology t = Make(32);
  for (int a = 0; a < 32; ++a) {
    t.SetNumaNode(a, a / 16);
    for (int b = a + 1; b < 32; ++b) {
      if (a / 8 == b / 8) t.SetNvSwitchLinks(a, b, 12);
      t.SetPcie(a, b, a / 16 == b / 16 ? PcieLevel::kNode : PcieLevel::kSystem);
    }
  }
  std::vector<int> all(32);
  for (int i = 0; i < 32; ++i) all[i] = i;
  absl::StatusOr<std::vector<int>> got = Choose(t, all, {}, 8);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAreArray({0, 1, 2, 3, 4, 5, 6, 7}));
  got = Choose(t, all, {19}, 8);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAreArray({16, 17, 18, 19, 20, 21, 22, 23}));

  // 1 GPU with island 0 partly used: taken from the broken island.
  std::vector<int> avail(all.begin() + 3, all.end());
  got = Choose(t, avail, {}, 1);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAreArray({3}));

  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    Topology r = RandomTopology(rng, 17 + static_cast<int>(rng() % 48));
    std::vector<int> usable;
    for (int g = 0; g < r.num_gpus(); ++g) {
      if (r.Usable(g)) usable.push_back(g);
    }
    if (static_cast<int>(usable.size()) <= kChooseExactLimit) continue;
    const int size = 1 + static_cast<int>(rng() % usable.size());
    std::vector<int> must = {usable[rng() % usable.size()]};
    absl::StatusOr<std::vector<int>> a = Choose(r, usable, must, size);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(static_cast<int>(a->size()), size);
    EXPECT_TRUE(std::is_sorted(a->begin(), a->end()));
    EXPECT_TRUE(std::adjacent_find(a->begin(), a->end()) == a->end());
    EXPECT_TRUE(std::find(a->begin(), a->end(), must[0]) != a->end());
    for (int g : *a) EXPECT_TRUE(r.Usable(g));
    EXPECT_EQ(*a, *Choose(r, usable, must, size));
  }
}

TEST(TopologyTest, CreateRejectsBadSizes) {
  EXPECT_FALSE(Topology::Create(-1).ok());
  EXPECT_FALSE(Topology::Create(65).ok());
  EXPECT_TRUE(Topology::Create(64).ok());
}

TEST(TopologyTest, AnyNvLinkBeatsAnyPcie) {
  Topology t = Make(4);
  t.SetNumaNode(0, 0);
  t.SetNumaNode(1, 0);
  t.SetPcie(0, 1, PcieLevel::kInternal);
  t.SetNvLinks(2, 3, 1);
  EXPECT_EQ(t.PairScore(0, 1), 70);
  EXPECT_EQ(t.PairScore(2, 3), 100);
  EXPECT_GT(t.PairScore(2, 3), t.PairScore(0, 1));
  EXPECT_EQ(t.PairScore(3, 2), t.PairScore(2, 3));
  t.SetNvSwitchLinks(2, 3, 6);
  EXPECT_EQ(t.PairScore(2, 3), 700);
}

}  // namespace
}  // namespace gdp
