// On every fake NVML machine (fake_nvml/machines/*.yaml): the topology read
// through NVML, the devices the plugin advertises by default, and
// PreferredAllocation's answer for every request size and many random
// availability and must-include sets, compared with the brute-force
// optimum of the same order (topology/topology_testing.h).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "config/config.h"
#include "plugin/preferred.h"
#include "resources/resources.h"
#include "testing/temp_dir.h"
#include "topology/discover.h"
#include "topology/topology_testing.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

class PreferredMachinesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "drv/usr/lib64");
    fs::create_symlink(GDP_FAKE_NVML_LIB,
                       dir_ / "drv/usr/lib64/libnvidia-ml.so.1");
    setenv("FAKE_NVML_CONTROL", (dir_ / "control").c_str(), 1);
    setenv("FAKE_NVML_MACHINE", GetParam().c_str(), 1);
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_MACHINE");
    unsetenv("FAKE_NVML_CONTROL");
  }
  const gdp::testing::TempDir tmp_{"pref-machines"};
  const fs::path dir_ = tmp_.path();
};

TEST_P(PreferredMachinesTest, MatchesBruteForce) {
  auto nvml = Nvml::Open((dir_ / "drv").string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  auto node = DiscoverGpus(**nvml, "/nonexistent");
  ASSERT_TRUE(node.ok()) << node.status();
  const NodeTopology topology = DiscoverNodeTopology(**nvml, *node);
  const Topology& t = topology.topology();
  ASSERT_EQ(t.num_gpus(), static_cast<int>(node->gpus.size()));
  for (int g = 0; g < t.num_gpus(); ++g) ASSERT_TRUE(t.Usable(g));

  auto resources = BuildResources(*node, Config(), nullptr);
  ASSERT_TRUE(resources.ok()) << resources.status();
  ASSERT_EQ(resources->size(), 1u);
  const DeviceList list((*resources)[0].devices);
  // The device of each topology position.
  std::vector<std::string> id_of(t.num_gpus());
  for (const Device& d : list.devices) {
    const int p = topology.Find(d.gpu_uuid);
    ASSERT_GE(p, 0) << d.id;
    id_of[p] = d.id;
  }

  std::mt19937 rng(17);
  const int n = t.num_gpus();
  const int trials = n > 8 ? 30 : 200;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<int> avail;
    const int keep = trial == 0 ? 100 : 30 + static_cast<int>(rng() % 71);
    for (int g = 0; g < n; ++g) {
      if (static_cast<int>(rng() % 100) < keep) avail.push_back(g);
    }
    std::shuffle(avail.begin(), avail.end(), rng);
    for (int size = 1; size <= static_cast<int>(avail.size()); ++size) {
      std::vector<int> must = avail;
      std::shuffle(must.begin(), must.end(), rng);
      must.resize(std::min<size_t>(size, rng() % 4));
      std::vector<std::string> avail_ids, must_ids;
      for (int g : avail) avail_ids.push_back(id_of[g]);
      for (int g : must) must_ids.push_back(id_of[g]);
      std::vector<std::string> want = must_ids;
      std::vector<int> best = BruteForce(t, avail, must, size);
      std::sort(best.begin(), best.end(), [&](int a, int b) {
        return list.Find(id_of[a]) < list.Find(id_of[b]);  // list order
      });
      for (int g : best) {
        if (std::find(must.begin(), must.end(), g) == must.end()) {
          want.push_back(id_of[g]);
        }
      }
      SCOPED_TRACE("available " + absl::StrJoin(avail, ",") + " must " +
                   absl::StrJoin(must, ",") + " size " + std::to_string(size));
      for (SharedAllocationPolicy policy :
           {SharedAllocationPolicy::kDistributed,
            SharedAllocationPolicy::kPacked}) {
        auto got = PreferredAllocation(list, avail_ids, must_ids, size, policy,
                                       &topology);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(*got, want);
      }
    }
  }
}

std::vector<std::string> Machines() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(GDP_MACHINES_DIR)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PreferredMachinesTest,
                         ::testing::ValuesIn(Machines()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name =
                               fs::path(info.param).stem().string();
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace gdp
