#include "cmd/gpu_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

using ::testing::ElementsAreArray;

MigInfo Mig(unsigned index, const std::string& uuid, const std::string& profile,
            unsigned gi) {
  MigInfo m;
  m.index = index;
  m.uuid = uuid;
  m.profile = profile;
  m.gi = gi;
  m.memory_bytes = 10ull << 30;
  return m;
}

// Two GPUs: GPU-A with MIG (two MIG devices), GPU-B without.
NodeGpus Base() {
  NodeGpus n;
  n.driver_version = "550.54.15";
  n.cuda_driver_version = 12040;
  GpuInfo a;
  a.index = 0;
  a.uuid = "GPU-A";
  a.name = "NVIDIA H100 80GB HBM3";
  a.minor = 0;
  a.pci_bus_id = "0000:18:00.0";
  a.memory_bytes = 80ull << 30;
  a.numa_node = 0;
  a.mig_capable = true;
  a.mig_enabled = true;
  a.migs = {Mig(0, "MIG-1", "3g.40gb", 2), Mig(1, "MIG-2", "1g.10gb", 9)};
  GpuInfo b = a;
  b.index = 1;
  b.uuid = "GPU-B";
  b.minor = 1;
  b.pci_bus_id = "0000:2a:00.0";
  b.mig_enabled = false;
  b.migs.clear();
  n.gpus = {a, b};
  return n;
}

TEST(LayoutChangesTest, Table) {
  struct Case {
    const char* name;
    std::function<void(NodeGpus&)> change;  // applied to a copy of Base()
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"same", [](NodeGpus&) {}, {}},
      {"memory, NUMA, CUDA and brand are not layout",
       [](NodeGpus& n) {
         n.cuda_driver_version = 12050;
         n.gpus[0].memory_bytes = 1;
         n.gpus[0].numa_node = 1;
         n.gpus[1].brand = "Nvidia";
         n.gpus[0].migs[0].memory_bytes = 1;
         n.gpus[0].migs[0].multiprocessors = 3;
       },
       {}},
      {"unusable GPUs count only by their absence",
       [](NodeGpus& n) {
         n.unusable.push_back(
             LeftOut{.gpu = 3,
                     .mig = std::nullopt,
                     .error = absl::UnknownError("GPU 3: lost")});
       },
       {}},
      {"MIG devices of a GPU without MIG are not served",
       [](NodeGpus& n) { n.gpus[1].migs = {Mig(0, "MIG-9", "7g.80gb", 0)}; },
       {}},
      {"GPU gone",
       [](NodeGpus& n) { n.gpus.pop_back(); },
       {"GPU GPU-B is gone"}},
      {"GPU appeared",
       [](NodeGpus& n) {
         n.gpus.push_back(n.gpus[1]);
         n.gpus.back().uuid = "GPU-C";
         n.gpus.back().index = 2;
       },
       {"GPU GPU-C appeared"}},
      {"GPU replaced at the same index",
       [](NodeGpus& n) { n.gpus[1].uuid = "GPU-D"; },
       {"GPU GPU-B is gone", "GPU GPU-D appeared"}},
      {"driver version",
       [](NodeGpus& n) { n.driver_version = "560.28.03"; },
       {"driver version 550.54.15 -> 560.28.03"}},
      {"index, minor, bus id and name",
       [](NodeGpus& n) {
         n.gpus[1].index = 5;
         n.gpus[1].minor = 6;
         n.gpus[1].pci_bus_id = "0000:3a:00.0";
         n.gpus[1].name = "NVIDIA H200";
       },
       {"GPU GPU-B: index 1 -> 5", "GPU GPU-B: minor 1 -> 6",
        "GPU GPU-B: PCI bus id 0000:2a:00.0 -> 0000:3a:00.0",
        "GPU GPU-B: name NVIDIA H100 80GB HBM3 -> NVIDIA H200"}},
      {"MIG enabled with devices",
       [](NodeGpus& n) {
         n.gpus[1].mig_enabled = true;
         n.gpus[1].migs = {Mig(0, "MIG-3", "7g.80gb", 0)};
       },
       {"GPU GPU-B: MIG enabled",
        "GPU GPU-B: MIG device MIG-3 (7g.80gb) appeared"}},
      {"MIG enabled without devices yet",
       [](NodeGpus& n) { n.gpus[1].mig_enabled = true; },
       {"GPU GPU-B: MIG enabled"}},
      {"MIG disabled",
       [](NodeGpus& n) {
         n.gpus[0].mig_enabled = false;
         n.gpus[0].migs.clear();
       },
       {"GPU GPU-A: MIG disabled",
        "GPU GPU-A: MIG device MIG-1 (3g.40gb) is gone",
        "GPU GPU-A: MIG device MIG-2 (1g.10gb) is gone"}},
      {"MIG device destroyed and another created",
       [](NodeGpus& n) { n.gpus[0].migs[1] = Mig(1, "MIG-4", "2g.20gb", 3); },
       {"GPU GPU-A: MIG device MIG-2 (1g.10gb) is gone",
        "GPU GPU-A: MIG device MIG-4 (2g.20gb) appeared"}},
      {"MIG device's profile, index and instances",
       [](NodeGpus& n) {
         MigInfo& m = n.gpus[0].migs[1];
         m.profile = "1c.2g.20gb";
         m.index = 4;
         m.gi = 5;
         m.ci = 1;
       },
       {"GPU GPU-A: MIG device MIG-2: profile 1g.10gb -> 1c.2g.20gb",
        "GPU GPU-A: MIG device MIG-2: index 1 -> 4",
        "GPU GPU-A: MIG device MIG-2: GPU instance 9 -> 5",
        "GPU GPU-A: MIG device MIG-2: compute instance 0 -> 1"}},
      {"every GPU gone",
       [](NodeGpus& n) { n.gpus.clear(); },
       {"GPU GPU-A is gone", "GPU GPU-B is gone"}},
  };
  for (const Case& c : cases) {
    NodeGpus after = Base();
    c.change(after);
    EXPECT_THAT(LayoutChanges(Base(), after), ElementsAreArray(c.want))
        << c.name;
  }
}

TEST(LayoutChangesTest, EmptyNodes) {
  EXPECT_TRUE(LayoutChanges(NodeGpus{}, NodeGpus{}).empty());
  EXPECT_THAT(LayoutChanges(NodeGpus{}, Base()),
              ElementsAreArray({"driver version  -> 550.54.15",
                                "GPU GPU-A appeared", "GPU GPU-B appeared"}));
}

// A MIG profile with its placements (start, size), as ReadMigProfiles
// reads them.
MigProfilePlacements Profile(
    const std::string& name, unsigned id, unsigned size,
    const std::vector<std::pair<unsigned, unsigned>>& placements) {
  MigProfilePlacements p;
  p.profile_id = id;
  p.name = name;
  p.slice_count = size;
  p.memory_mib = 10240ull * size;
  for (const auto& [start, slices] : placements) {
    nvmlGpuInstancePlacement_t pl{};
    pl.start = start;
    pl.size = slices;
    p.placements.push_back(pl);
  }
  return p;
}

// Base() with NVIDIA's DynamicMIG: GPU-A's MIG profiles read, so the DRA
// side makes its MIG devices on demand (its two MIG devices are instances
// made at prepare, or by anyone else).
NodeGpus Dynamic() {
  NodeGpus n = Base();
  n.gpus[0].mig_profiles = {Profile("1g.10gb", 19, 1, {{0, 1}, {1, 1}}),
                            Profile("3g.40gb", 9, 3, {{0, 4}, {4, 4}})};
  return n;
}

TEST(LayoutChangesTest, MigMadeOnDemand) {
  const LayoutOptions on_demand = MigMadeOnDemand(Dynamic(), true);
  struct Case {
    const char* name;
    LayoutOptions options;
    std::function<void(NodeGpus&)> before;  // applied to a copy of Dynamic()
    std::function<void(NodeGpus&)> change;  // applied to a copy of Dynamic()
    std::vector<std::string> want;
  };
  const auto same = [](NodeGpus&) {};
  const Case cases[] = {
      {"an instance made",
       on_demand,
       same,
       [](NodeGpus& n) {
         n.gpus[0].migs.push_back(Mig(2, "MIG-3", "1g.10gb", 13));
       },
       {}},
      {"an instance destroyed",
       on_demand,
       same,
       [](NodeGpus& n) { n.gpus[0].migs.pop_back(); },
       {}},
      {"every instance destroyed",
       on_demand,
       same,
       [](NodeGpus& n) { n.gpus[0].migs.clear(); },
       {}},
      {"the first instance made",
       on_demand,
       [](NodeGpus& n) { n.gpus[0].migs.clear(); },
       same,
       {}},
      {"an instance destroyed and another made at its index",
       on_demand,
       same,
       [](NodeGpus& n) { n.gpus[0].migs[1] = Mig(1, "MIG-4", "2g.20gb", 3); },
       {}},
      {"without the option, instances are the layout",
       LayoutOptions{},
       same,
       [](NodeGpus& n) { n.gpus[0].migs.pop_back(); },
       {"GPU GPU-A: MIG device MIG-2 (1g.10gb) is gone"}},
      {"on demand only for the GPUs named",
       MigMadeOnDemand(Dynamic(), false),
       same,
       [](NodeGpus& n) {
         n.gpus[0].migs.push_back(Mig(2, "MIG-3", "1g.10gb", 13));
       },
       {"GPU GPU-A: MIG device MIG-3 (1g.10gb) appeared"}},
      {"the GPU gone",
       on_demand,
       same,
       [](NodeGpus& n) { n.gpus.erase(n.gpus.begin()); },
       {"GPU GPU-A is gone"}},
      {"another GPU in its place (UUID)",
       on_demand,
       same,
       [](NodeGpus& n) { n.gpus[0].uuid = "GPU-Z"; },
       {"GPU GPU-A is gone", "GPU GPU-Z appeared"}},
      {"the GPU appearing",
       on_demand,
       [](NodeGpus& n) { n.gpus.erase(n.gpus.begin()); },
       same,
       {"GPU GPU-A appeared"}},
      {"its index, with an instance made",
       on_demand,
       same,
       [](NodeGpus& n) {
         n.gpus[0].index = 3;
         n.gpus[0].migs.pop_back();
       },
       {"GPU GPU-A: index 0 -> 3"}},
      {"MIG disabled",
       on_demand,
       same,
       [](NodeGpus& n) {
         n.gpus[0].mig_enabled = false;
         n.gpus[0].migs.clear();
         n.gpus[0].mig_profiles.clear();
       },
       {"GPU GPU-A: MIG disabled",
        "GPU GPU-A: MIG device MIG-1 (3g.40gb) is gone",
        "GPU GPU-A: MIG device MIG-2 (1g.10gb) is gone"}},
      {"MIG enabled, profiles read",
       on_demand,
       [](NodeGpus& n) {
         n.gpus[0].mig_enabled = false;
         n.gpus[0].migs.clear();
         n.gpus[0].mig_profiles.clear();
       },
       [](NodeGpus& n) { n.gpus[0].migs.clear(); },
       {"GPU GPU-A: MIG enabled"}},
      {"profiles no longer read: the instances are the layout again",
       on_demand,
       same,
       [](NodeGpus& n) {
         n.gpus[0].mig_profiles.clear();
         n.gpus[0].migs.pop_back();
       },
       {"GPU GPU-A: MIG profiles not read",
        "GPU GPU-A: MIG device MIG-2 (1g.10gb) is gone"}},
      {"profiles read for the first time",
       LayoutOptions{},
       [](NodeGpus& n) { n.gpus[0].mig_profiles.clear(); },
       same,
       {"GPU GPU-A: MIG profiles read"}},
      {"profiles changed, instances still not the layout",
       on_demand,
       same,
       [](NodeGpus& n) {
         n.gpus[0].mig_profiles.pop_back();
         n.gpus[0].migs.pop_back();
       },
       {"GPU GPU-A: MIG profiles changed"}},
      {"the driver version",
       on_demand,
       same,
       [](NodeGpus& n) {
         n.driver_version = "560.28.03";
         n.gpus[0].migs.clear();
       },
       {"driver version 550.54.15 -> 560.28.03"}},
      {"the other GPU's MIG devices",
       on_demand,
       same,
       [](NodeGpus& n) {
         n.gpus[1].mig_enabled = true;
         n.gpus[1].migs = {Mig(0, "MIG-3", "7g.80gb", 0)};
       },
       {"GPU GPU-B: MIG enabled",
        "GPU GPU-B: MIG device MIG-3 (7g.80gb) appeared"}},
  };
  for (const Case& c : cases) {
    NodeGpus before = Dynamic();
    c.before(before);
    NodeGpus after = Dynamic();
    c.change(after);
    EXPECT_THAT(LayoutChanges(before, after, c.options),
                ElementsAreArray(c.want))
        << c.name;
  }
}

TEST(MigMadeOnDemandTest, Table) {
  struct Case {
    const char* name;
    std::function<void(NodeGpus&)> change;  // applied to a copy of Dynamic()
    bool dynamic_mig;
    std::set<std::string> want;
  };
  const Case cases[] = {
      {"the gate on: the MIG GPU with profiles",
       [](NodeGpus&) {},
       true,
       {"GPU-A"}},
      {"the gate off: none", [](NodeGpus&) {}, false, {}},
      {"no profiles read: none",
       [](NodeGpus& n) { n.gpus[0].mig_profiles.clear(); },
       true,
       {}},
      {"MIG disabled (profiles are read only with MIG on): none",
       [](NodeGpus& n) { n.gpus[0].mig_enabled = false; },
       true,
       {}},
      {"every such GPU",
       [](NodeGpus& n) {
         n.gpus[1].mig_enabled = true;
         n.gpus[1].mig_profiles = n.gpus[0].mig_profiles;
       },
       true,
       {"GPU-A", "GPU-B"}},
      {"no GPUs: none", [](NodeGpus& n) { n.gpus.clear(); }, true, {}},
  };
  for (const Case& c : cases) {
    NodeGpus dra = Dynamic();
    c.change(dra);
    EXPECT_EQ(MigMadeOnDemand(dra, c.dynamic_mig).mig_on_demand, c.want)
        << c.name;
  }
}

std::vector<std::string> Uuids(const NodeGpus& n) {
  std::vector<std::string> out;
  for (const GpuInfo& g : n.gpus) {
    out.push_back(g.uuid);
    for (const MigInfo& m : g.migs) out.push_back(g.uuid + "/" + m.uuid);
  }
  return out;
}

// Base() and a third GPU, GPU-C (index 2, MIG disabled).
NodeGpus Three() {
  NodeGpus n = Base();
  GpuInfo c = n.gpus[1];
  c.index = 2;
  c.uuid = "GPU-C";
  c.minor = 2;
  c.pci_bus_id = "0000:3b:00.0";
  n.gpus.push_back(c);
  return n;
}

// A discovery's entry for GPU `gpu` (or its MIG device `mig`) that NVML
// cannot describe, as DiscoverGpus makes it.
LeftOut Lost(unsigned gpu, std::optional<unsigned> mig = std::nullopt) {
  const std::string slot = mig.has_value()
                               ? absl::StrCat("GPU ", gpu, " MIG ", *mig)
                               : absl::StrCat("GPU ", gpu);
  return {.gpu = gpu,
          .mig = mig,
          .error = absl::UnavailableError(slot + ": GPU is lost")};
}

TEST(KeepUndescribedTest, Table) {
  struct Case {
    const char* name;
    NodeGpus served;
    std::function<void(NodeGpus&)> change;  // applied to a copy of served
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"all described: as found",
       Base(),
       [](NodeGpus& n) {
         n.gpus.erase(n.gpus.begin());
         n.gpus.front().mig_enabled = true;
         n.gpus.front().migs = {Mig(0, "MIG-3", "7g.80gb", 0)};
       },
       {"GPU-B", "GPU-B/MIG-3"}},
      {"a GPU left out stays, in index order",
       Base(),
       [](NodeGpus& n) {
         n.gpus.erase(n.gpus.begin());
         n.unusable = {Lost(0)};
       },
       {"GPU-A", "GPU-A/MIG-1", "GPU-A/MIG-2", "GPU-B"}},
      {"a MIG device left out stays",
       Base(),
       [](NodeGpus& n) {
         n.gpus[0].migs.erase(n.gpus[0].migs.begin());
         n.unusable = {Lost(0, 0)};
       },
       {"GPU-A", "GPU-A/MIG-1", "GPU-A/MIG-2", "GPU-B"}},
      {"additions are followed",
       Base(),
       [](NodeGpus& n) {
         n.gpus[0].migs.erase(n.gpus[0].migs.begin());
         n.gpus[0].migs.push_back(Mig(2, "MIG-5", "1g.10gb", 10));
         n.gpus.push_back(n.gpus[1]);
         n.gpus.back().uuid = "GPU-C";
         n.gpus.back().index = 2;
         n.unusable = {Lost(0, 0)};
       },
       {"GPU-A", "GPU-A/MIG-1", "GPU-A/MIG-2", "GPU-A/MIG-5", "GPU-B",
        "GPU-C"}},
      {"a MIG mode change is followed",
       Base(),
       [](NodeGpus& n) {
         n.gpus[0].mig_enabled = false;
         n.gpus[0].migs.clear();
         n.unusable = {Lost(1, 0)};
       },
       {"GPU-A", "GPU-B"}},
      // Narrowed: only what sits where the discovery left something out.
      {"a GPU gone while a MIG device is left out goes",
       Base(),
       [](NodeGpus& n) {
         n.gpus.pop_back();
         n.gpus[0].migs.pop_back();
         n.unusable = {Lost(0, 1)};
       },
       {"GPU-A", "GPU-A/MIG-1", "GPU-A/MIG-2"}},
      {"a MIG device gone while a GPU is left out goes",
       Base(),
       [](NodeGpus& n) {
         n.gpus.pop_back();
         n.gpus[0].migs.erase(n.gpus[0].migs.begin());
         n.unusable = {Lost(1)};
       },
       {"GPU-A", "GPU-A/MIG-2", "GPU-B"}},
      {"a MIG device stays only in its own slot",
       Base(),
       [](NodeGpus& n) {
         n.gpus[0].migs.clear();
         n.unusable = {Lost(0, 1)};
       },
       {"GPU-A", "GPU-A/MIG-2", "GPU-B"}},
      {"one GPU left out keeps one GPU: the one served in its slot",
       Three(),
       [](NodeGpus& n) {
         n.gpus.resize(1);
         n.unusable = {Lost(1)};
       },
       {"GPU-A", "GPU-A/MIG-1", "GPU-A/MIG-2", "GPU-B"}},
      {"a GPU left out of another slot: the indices moved",
       Three(),
       [](NodeGpus& n) {
         // GPU-A is gone, GPU-B is GPU 0 now and GPU 1 cannot be described.
         n.gpus.erase(n.gpus.begin());
         n.gpus[0].index = 0;
         n.gpus.pop_back();
         n.unusable = {Lost(1)};
       },
       {"GPU-B", "GPU-C"}},
  };
  for (const Case& c : cases) {
    NodeGpus found = c.served;
    c.change(found);
    NodeGpus got = KeepUndescribed(c.served, found);
    EXPECT_THAT(Uuids(got), ElementsAreArray(c.want)) << c.name;
    EXPECT_EQ(got.unusable.size(), found.unusable.size()) << c.name;
  }
}

TEST(KeepUndescribedTest, AGpuKeptInAnotherSlotTakesItsIndex) {
  NodeGpus found = Three();
  found.gpus.erase(found.gpus.begin());
  found.gpus[0].index = 0;
  found.gpus.pop_back();
  found.unusable = {Lost(1)};
  NodeGpus got = KeepUndescribed(Three(), found);
  ASSERT_EQ(got.gpus.size(), 2u);
  EXPECT_EQ(got.gpus[1].uuid, "GPU-C");
  EXPECT_EQ(got.gpus[1].index, 1u) << "NVML's index of the slot now";
}

}  // namespace
}  // namespace gdp
