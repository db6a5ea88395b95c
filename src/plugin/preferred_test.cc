#include "plugin/preferred.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "topology/topology_testing.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;
using Policy = SharedAllocationPolicy;

// g0..g7: g0-g3 on NUMA 0, g4-g7 on NUMA 1; u0, u1 with unknown NUMA.
DeviceList Node() {
  std::vector<Device> devices;
  for (int i = 0; i < 8; ++i) {
    Device d;
    d.id = "g" + std::to_string(i);
    d.visible_id = d.id;
    d.numa_node = i < 4 ? 0 : 1;
    devices.push_back(d);
  }
  for (int i = 0; i < 2; ++i) {
    Device d;
    d.id = "u" + std::to_string(i);
    d.visible_id = d.id;
    devices.push_back(d);
  }
  return DeviceList(devices);
}

// r0..r5 with 4 replicas each ("r0::0".."r0::3"): r0-r2 on NUMA 0, r3-r5
// on NUMA 1; and w0, a whole GPU on NUMA 0.
DeviceList Replicas() {
  std::vector<Device> devices;
  for (int u = 0; u < 6; ++u) {
    for (int k = 0; k < 4; ++k) {
      Device d;
      d.visible_id = "r" + std::to_string(u);
      d.id = d.visible_id + "::" + std::to_string(k);
      d.replica = k;
      d.numa_node = u < 3 ? 0 : 1;
      devices.push_back(d);
    }
  }
  Device w;
  w.id = w.visible_id = "w0";
  w.numa_node = 0;
  devices.push_back(w);
  return DeviceList(devices);
}

// "r1" -> {"r1::0".."r1::3"}; "r1::2" stays as is.
std::vector<std::string> Expand(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (n.find("::") != std::string::npos || n[0] == 'w') {
      out.push_back(n);
    } else {
      for (int k = 0; k < 4; ++k) out.push_back(n + "::" + std::to_string(k));
    }
  }
  return out;
}

TEST(PreferredTest, WholeDevicesByNuma) {
  struct Case {
    const char* name;
    std::vector<std::string> available, must;
    int size;
    std::vector<std::string> want;
  } cases[] = {
      {"first node when both fit",
       {"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"},
       {},
       2,
       {"g0", "g1"}},
      {"smallest node that fits",
       {"g0", "g1", "g2", "g4", "g5"},
       {},
       2,
       {"g4", "g5"}},
      {"node of the must-include device",
       {"g0", "g1", "g2", "g3", "g4", "g5"},
       {"g5"},
       2,
       {"g5", "g4"}},
      {"spills over when no node fits",
       {"g0", "g1", "g4", "g5", "g6"},
       {},
       4,
       {"g0", "g4", "g5", "g6"}},
      {"all must-include", {"g0", "g5"}, {"g5", "g0"}, 2, {"g5", "g0"}},
      {"unknown NUMA groups together", {"u0", "u1", "g0"}, {}, 2, {"u0", "u1"}},
  };
  DeviceList list = Node();
  for (const Case& c : cases) {
    for (Policy p : {Policy::kDistributed, Policy::kPacked}) {
      auto r = PreferredAllocation(list, c.available, c.must, c.size, p);
      ASSERT_TRUE(r.ok()) << c.name << ": " << r.status();
      EXPECT_EQ(*r, c.want) << c.name;
    }
  }
}

TEST(PreferredTest, Replicas) {
  struct Case {
    const char* name;
    Policy policy;
    std::vector<std::string> available, must;  // see Expand
    int size;
    std::vector<std::string> want;
  } cases[] = {
      {"distributed: one replica per unit, NUMA-local",
       Policy::kDistributed,
       {"r0", "r1", "r2", "r3", "r4", "r5"},
       {},
       3,
       {"r0::0", "r1::0", "r2::0"}},
      {"distributed: least loaded units first",
       Policy::kDistributed,
       {"r0", "r1::2", "r1::3", "r2::3", "r3::1", "r3::2", "r3::3"},
       {},
       2,
       {"r0::0", "r3::1"}},
      {"distributed: a loaded unit before a second replica on one unit",
       Policy::kDistributed,
       {"r0", "r2::3"},
       {},
       2,
       {"r0::0", "r2::3"}},
      {"distributed: wraps around once every unit is used",
       Policy::kDistributed,
       {"r0", "r1"},
       {},
       3,
       {"r0::0", "r0::1", "r1::0"}},
      {"distributed: avoids the must-include unit",
       Policy::kDistributed,
       {"r0", "r1", "r2::0"},
       {"r0::2"},
       2,
       {"r0::2", "r1::0"}},
      {"distributed: NUMA node of the must-include device breaks ties",
       Policy::kDistributed,
       {"r2", "r3", "r4"},
       {"r4::0"},
       2,
       {"r4::0", "r3::0"}},
      {"distributed: a whole GPU is a unit of its own",
       Policy::kDistributed,
       {"r0", "w0"},
       {},
       2,
       {"r0::0", "w0"}},
      {"packed: the most used unit that fits the request",
       Policy::kPacked,
       {"r0", "r1::3", "r2::2", "r2::3"},
       {},
       2,
       {"r2::2", "r2::3"}},
      {"packed: one replica goes to the most used unit",
       Policy::kPacked,
       {"r0", "r1::3", "r2::2", "r2::3"},
       {},
       1,
       {"r1::3"}},
      {"packed: fewest units, the most used among them",
       Policy::kPacked,
       {"r0", "r1::3", "r2::2", "r2::3"},
       {},
       5,
       {"r0::0", "r0::1", "r0::2", "r0::3", "r1::3"}},
      {"packed: all free, one unit",
       Policy::kPacked,
       {"r0", "r1", "r2", "r3"},
       {},
       3,
       {"r0::0", "r0::1", "r0::2"}},
      {"packed: fills the must-include unit first",
       Policy::kPacked,
       {"r0", "r1::3"},
       {"r0::1"},
       3,
       {"r0::1", "r0::0", "r0::2"}},
      {"packed: NUMA node of the must-include unit breaks ties",
       Policy::kPacked,
       {"r1", "r4", "r5::0", "r5::1"},
       {"r5::0"},
       3,
       {"r5::0", "r4::0", "r5::1"}},
  };
  DeviceList list = Replicas();
  for (const Case& c : cases) {
    auto r = PreferredAllocation(list, Expand(c.available), c.must, c.size,
                                 c.policy);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status();
    EXPECT_EQ(*r, c.want) << c.name;
  }
}

// Random nodes, availability, requests and must-include sets (seeded), with
// and without a random topology of the units: distributed always spans
// min(size, units among the available) units, never passing over a less
// loaded unit for a more loaded one; packed always spans the fewest units
// possible.
TEST(PreferredTest, ReplicaPolicyGuarantees) {
  std::mt19937 rng(20240611);
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 3000; ++trial) {
    SCOPED_TRACE(::testing::Message() << "trial " << trial);
    std::vector<Device> devices;
    int units = uniform(1, 8);
    for (int u = 0; u < units; ++u) {
      int replicas = uniform(1, 8);
      int numa = uniform(-1, 1);
      for (int k = 0; k < replicas; ++k) {
        Device d;
        d.visible_id = "GPU-" + std::to_string(u);
        d.gpu_uuid = d.visible_id;
        d.id = d.visible_id + "::" + std::to_string(k);
        d.replica = k;
        d.numa_node = numa;
        devices.push_back(d);
      }
    }
    std::shuffle(devices.begin(), devices.end(), rng);
    DeviceList list(devices);
    std::vector<std::string> uuids;
    for (int u = 0; u < units; ++u) uuids.push_back("GPU-" + std::to_string(u));
    const NodeTopology topology(RandomTopology(rng, units), uuids);

    double p = uniform(1, 10) / 10.0;
    std::vector<std::string> available;
    std::map<std::string, int> free;  // unit -> available devices
    for (const Device& d : devices) {
      if (std::bernoulli_distribution(p)(rng)) {
        available.push_back(d.id);
        free[d.visible_id]++;
      }
    }
    if (available.empty()) continue;
    std::shuffle(available.begin(), available.end(), rng);
    int size = uniform(1, static_cast<int>(available.size()));
    // Half the trials carry must-include devices, at most one per unit.
    std::vector<std::string> must;
    std::set<std::string> must_units;
    if (trial % 2 == 1) {
      int want = uniform(0, size);
      for (const std::string& id : available) {
        if (static_cast<int>(must.size()) == want) break;
        const std::string& unit = list.Find(id)->visible_id;
        if (must_units.insert(unit).second) must.push_back(id);
      }
    }
    int need = size - static_cast<int>(must.size());

    for (auto [policy, topo] :
         {std::pair(Policy::kDistributed, (const NodeTopology*)nullptr),
          std::pair(Policy::kPacked, (const NodeTopology*)nullptr),
          std::pair(Policy::kDistributed, &topology),
          std::pair(Policy::kPacked, &topology)}) {
      SCOPED_TRACE(topo == nullptr ? "no topology" : "topology");
      auto r = PreferredAllocation(list, available, must, size, policy, topo);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->size(), static_cast<size_t>(size));
      ASSERT_TRUE(std::equal(must.begin(), must.end(), r->begin()));
      std::set<std::string> ids(r->begin(), r->end());
      ASSERT_EQ(ids.size(), r->size()) << "a device chosen twice";
      std::set<std::string> used;
      for (const std::string& id : *r) {
        ASSERT_NE(std::find(available.begin(), available.end(), id),
                  available.end());
        used.insert(list.Find(id)->visible_id);
      }
      // Deterministic.
      EXPECT_EQ(
          *r, *PreferredAllocation(list, available, must, size, policy, topo));

      if (policy == Policy::kDistributed) {
        size_t spanned = std::min<size_t>(size, free.size());
        EXPECT_EQ(used.size(), spanned) << "distributed";
        // Load of a unit outside must-include: its devices not available.
        std::map<std::string, int> load;
        for (const Device& d : devices) load[d.visible_id]++;
        for (const auto& [unit, n] : free) load[unit] -= n;
        int max_used = -1, min_unused = 1 << 20;
        for (const auto& [unit, n] : free) {
          if (must_units.count(unit)) continue;
          if (used.count(unit)) {
            max_used = std::max(max_used, load[unit]);
          } else {
            min_unused = std::min(min_unused, load[unit]);
          }
        }
        EXPECT_LE(max_used, min_unused) << "distributed passed over a unit";
      } else {
        // Fill the must-include units, then the fewest others.
        int left = need;
        std::vector<int> others;
        for (const auto& [unit, n] : free) {
          int rest = n - (must_units.count(unit) ? 1 : 0);
          if (must_units.count(unit)) {
            left -= std::min(left, rest);
          } else {
            others.push_back(n);
          }
        }
        std::sort(others.rbegin(), others.rend());
        size_t fewest = must_units.size();
        for (int n : others) {
          if (left <= 0) break;
          left -= n;
          fewest++;
        }
        EXPECT_EQ(used.size(), fewest) << "packed";
      }
    }
  }
}

TEST(PreferredTest, RefusesBadRequests) {
  struct Case {
    std::vector<std::string> available, must;
    int size;
    const char* message;
  } cases[] = {
      {{"g0"}, {}, 0, "at least 1"},
      {{"g0"}, {}, 2, "exceeds the 1 available"},
      {{"g0", "gX"}, {}, 1, "unknown available device ID 'gX'"},
      {{"g0", "g0"}, {}, 1, "'g0' is listed twice"},
      {{"g0", "g1"}, {"g2"}, 1, "'g2' is not among the available"},
      {{"g0", "g1"}, {"g0", "g0"}, 2, "must-include device ID 'g0' is listed"},
      {{"g0", "g1"}, {"g0", "g1"}, 1, "exceed allocation_size 1"},
  };
  DeviceList list = Node();
  for (const Case& c : cases) {
    auto r = PreferredAllocation(list, c.available, c.must, c.size,
                                 Policy::kDistributed);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace gdp
