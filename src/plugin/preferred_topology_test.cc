// PreferredAllocation with a topology: whole GPUs, GPUs the topology cannot
// rank, MIG devices, and replicas under both policies.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "plugin/preferred.h"
#include "topology/choose.h"
#include "topology/topology_testing.h"

namespace gdp {
namespace {

using ::testing::ElementsAreArray;
using Policy = SharedAllocationPolicy;

std::string Uuid(int gpu) { return "GPU-" + std::to_string(gpu); }

std::vector<std::string> Uuids(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(Uuid(i));
  return out;
}

// One device per GPU ("GPU-i"), or `replicas` replicas each
// ("GPU-i::k"), NUMA node from the topology.
DeviceList Gpus(const Topology& t, int replicas = 0) {
  std::vector<Device> devices;
  for (int i = 0; i < t.num_gpus(); ++i) {
    Device d;
    d.visible_id = d.gpu_uuid = Uuid(i);
    d.gpu_index = static_cast<unsigned>(i);
    d.numa_node = t.NumaNode(i);
    if (replicas == 0) {
      d.id = d.visible_id;
      devices.push_back(d);
    }
    for (int k = 0; k < replicas; ++k) {
      d.id = d.visible_id + "::" + std::to_string(k);
      d.replica = k;
      devices.push_back(d);
    }
  }
  return DeviceList(devices);
}

// "GPU-i" for each i; "i:k" becomes replica k of GPU i.
std::vector<std::string> Ids(const std::vector<std::string>& short_ids) {
  std::vector<std::string> out;
  for (const std::string& s : short_ids) {
    size_t colon = s.find(':');
    out.push_back(colon == std::string::npos
                      ? Uuid(std::stoi(s))
                      : Uuid(std::stoi(s.substr(0, colon))) +
                            "::" + s.substr(colon + 1));
  }
  return out;
}

std::vector<std::string> AllIds(const DeviceList& list) {
  std::vector<std::string> out;
  for (const Device& d : list.devices) out.push_back(d.id);
  return out;
}

TEST(PreferredTopologyTest, WholeGpus) {
  Topology lost3 = Dgx1();
  lost3.SetUsable(3, false);
  const struct Case {
    const char* name;
    Topology topology;
    std::vector<std::string> available;  // empty: all
    std::vector<std::string> must;
    int size;
    std::vector<std::string> want;  // must first, then ascending
  } cases[] = {
      {"pair with two NVLinks", Dgx1(), {}, {}, 2, {"2", "3"}},
      {"quad", Dgx1(), {}, {}, 4, {"0", "1", "2", "3"}},
      {"quad around must", Dgx1(), {}, {"6"}, 4, {"6", "4", "5", "7"}},
      {"single keeps the quad",
       Dgx1(),
       {"0", "1", "2", "3", "4"},
       {},
       1,
       {"4"}},
      // Only the PCIe bonus separates {0,3} from {6,7}: the broken quad
      // gives the pair, the whole quad stays.
      {"pair from the broken quad",
       Dgx1(),
       {"0", "3", "4", "5", "6", "7"},
       {},
       2,
       {"0", "3"}},
      {"lost GPU left out", lost3, {}, {}, 4, {"4", "5", "6", "7"}},
      {"lost GPU when needed",
       lost3,
       {"0", "1", "2", "3"},
       {},
       4,
       {"0", "1", "2", "3"}},
      {"lost GPU as must", lost3, {}, {"3"}, 2, {"3", "0"}},
      {"nvswitch keeps numa", HgxH100(), {}, {}, 4, {"0", "1", "2", "3"}},
      {"pcie switch pair", Pcie4(), {}, {}, 2, {"0", "1"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const NodeTopology topology(c.topology, Uuids(c.topology.num_gpus()));
    DeviceList list = Gpus(c.topology);
    std::vector<std::string> available =
        c.available.empty() ? AllIds(list) : Ids(c.available);
    auto got = PreferredAllocation(list, available, Ids(c.must), c.size,
                                   Policy::kDistributed, &topology);
    ASSERT_TRUE(got.ok()) << got.status();
    if (std::string(c.name) == "lost GPU as must") {
      ASSERT_EQ(got->size(), 2u);
      EXPECT_EQ((*got)[0], Uuid(3));
      continue;
    }
    EXPECT_THAT(*got, ElementsAreArray(Ids(c.want)));
  }
}

// MIG devices and GPUs the topology does not know fall back to NUMA.
TEST(PreferredTopologyTest, UnknownDevicesUseNuma) {
  const NodeTopology topology(Dgx1(), Uuids(8));
  DeviceList gpus = Gpus(Dgx1());
  std::vector<Device> devices = gpus.devices;
  for (Device& d : devices) d.mig_gi = 1;  // as if MIG devices
  DeviceList migs(devices);
  std::vector<std::string> all = AllIds(migs);
  auto with =
      PreferredAllocation(migs, all, {}, 2, Policy::kDistributed, &topology);
  auto without = PreferredAllocation(migs, all, {}, 2, Policy::kDistributed);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(*with, *without);

  const NodeTopology other(Dgx1(), {"a", "b", "c", "d", "e", "f", "g", "h"});
  auto unknown = PreferredAllocation(gpus, AllIds(gpus), {}, 2,
                                     Policy::kDistributed, &other);
  auto numa =
      PreferredAllocation(gpus, AllIds(gpus), {}, 2, Policy::kDistributed);
  ASSERT_TRUE(unknown.ok() && numa.ok());
  EXPECT_EQ(*unknown, *numa);
}

TEST(PreferredTopologyTest, Replicas) {
  const Topology dgx1 = Dgx1();
  const NodeTopology topology(dgx1, Uuids(8));
  const DeviceList list = Gpus(dgx1, 4);
  auto without = [&](const std::vector<std::string>& taken) {
    std::vector<std::string> out;
    for (const std::string& id : AllIds(list)) {
      if (std::find(taken.begin(), taken.end(), id) == taken.end()) {
        out.push_back(id);
      }
    }
    return out;
  };
  const struct Case {
    const char* name;
    Policy policy;
    std::vector<std::string> taken, must;
    int size;
    std::vector<std::string> want;
  } cases[] = {
      // One replica on each of the best linked pair.
      {"distributed pair", Policy::kDistributed, {}, {}, 2, {"2:0", "3:0"}},
      // GPUs 2 and 3 carry load: a linked pair among the idle ones that
      // leaves the idle quad 4-7 whole.
      {"distributed skips loaded",
       Policy::kDistributed,
       {"2:0", "3:0"},
       {},
       2,
       {"0:0", "1:0"}},
      // Idle GPUs 0 and 1 are taken first (least loaded); the third comes
      // from the next tier, the one with two NVLinks to them.
      {"distributed tiers",
       Policy::kDistributed,
       {"2:0", "3:0", "4:0", "5:0", "6:0", "7:0"},
       {},
       3,
       {"0:0", "1:0", "2:1"}},
      {"distributed near must",
       Policy::kDistributed,
       {},
       {"5:0"},
       2,
       {"5:0", "6:0"}},
      // 8 replicas need two GPUs: the best linked pair.
      {"packed pair",
       Policy::kPacked,
       {},
       {},
       8,
       {"2:0", "2:1", "2:2", "2:3", "3:0", "3:1", "3:2", "3:3"}},
      // One more GPU next to the must-include one.
      {"packed near must",
       Policy::kPacked,
       {},
       {"5:0"},
       5,
       {"5:0", "5:1", "5:2", "5:3", "6:0"}},
      // One GPU fits: the most loaded one that fits, topology aside.
      {"packed fills loaded", Policy::kPacked, {"7:0"}, {}, 2, {"7:1", "7:2"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = PreferredAllocation(list, without(Ids(c.taken)), Ids(c.must),
                                   c.size, c.policy, &topology);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_THAT(*got, ElementsAreArray(Ids(c.want)));
  }
}

// Whole GPUs through PreferredAllocation equal the brute-force optimum on
// random topologies, availability and must-include sets.
TEST(PreferredTopologyTest, MatchesBruteForce) {
  std::mt19937 rng(11);
  for (int i = 0; i < 60; ++i) {
    const int n = 1 + static_cast<int>(rng() % 10);
    const Topology t = RandomTopology(rng, n);
    const NodeTopology topology(t, Uuids(n));
    const DeviceList list = Gpus(t);
    for (int trial = 0; trial < 10; ++trial) {
      std::vector<int> avail, usable;
      for (int g = 0; g < n; ++g) {
        if (rng() % 4 != 0) avail.push_back(g);
      }
      std::shuffle(avail.begin(), avail.end(), rng);
      for (int g : avail) {
        if (t.Usable(g)) usable.push_back(g);
      }
      for (int size = 1; size <= static_cast<int>(usable.size()); ++size) {
        std::vector<int> must = usable;
        std::shuffle(must.begin(), must.end(), rng);
        must.resize(std::min<size_t>(size, rng() % 3));
        std::vector<std::string> avail_ids, must_ids, want;
        for (int g : avail) avail_ids.push_back(Uuid(g));
        for (int g : must) must_ids.push_back(Uuid(g));
        want = must_ids;
        for (int g : BruteForce(t, avail, must, size)) {
          if (std::find(must.begin(), must.end(), g) == must.end()) {
            want.push_back(Uuid(g));
          }
        }
        SCOPED_TRACE("available " + absl::StrJoin(avail, ",") + " must " +
                     absl::StrJoin(must, ",") + " size " +
                     std::to_string(size));
        auto got = PreferredAllocation(list, avail_ids, must_ids, size,
                                       Policy::kDistributed, &topology);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(*got, want);
      }
    }
  }
}

}  // namespace
}  // namespace gdp
