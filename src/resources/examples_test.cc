// The example configs in docs/examples (NVIDIA's documented scenarios, in our
// words) load and produce the resources the docs promise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "config/load.h"
#include "resources/resources.h"

namespace gdp {
namespace {

GpuInfo Gpu(unsigned index) {
  GpuInfo g;
  g.index = index;
  g.uuid = absl::StrCat("GPU-", index);
  g.name = "NVIDIA H100 80GB HBM3";
  g.minor = index;
  g.memory_bytes = 80ull << 30;
  g.cc_major = 9;
  return g;
}

// GPU 0 with MIG (3g.40gb, 1g.10gb, 1g.10gb), GPUs 1.. without.
NodeGpus Node(unsigned gpus, bool mig) {
  NodeGpus n;
  for (unsigned i = 0; i < gpus; ++i) n.gpus.push_back(Gpu(i));
  if (mig) {
    n.gpus[0].mig_enabled = true;
    unsigned gi[] = {2, 9, 10};
    const char* profile[] = {"3g.40gb", "1g.10gb", "1g.10gb"};
    for (unsigned j = 0; j < 3; ++j) {
      MigInfo m;
      m.index = j;
      m.uuid = absl::StrCat("MIG-", j);
      m.profile = profile[j];
      m.gi = gi[j];
      n.gpus[0].migs.push_back(m);
    }
  }
  return n;
}

MigCaps Caps() {
  std::string text;
  for (int gi : {2, 9, 10}) {
    absl::StrAppend(&text, "gpu0/gi", gi, "/access ", 10 + gi, "\n");
    absl::StrAppend(&text, "gpu0/gi", gi, "/ci0/access ", 30 + gi, "\n");
  }
  return *MigCaps::Parse(text, "mig-minors");
}

TEST(ExamplesTest, LoadAndProduceTheDocumentedResources) {
  struct Case {
    std::string file;
    unsigned gpus;
    bool mig;
    std::map<std::string, size_t> resources;  // name -> devices
  } cases[] = {
      {"time-slicing.yaml", 2, false, {{"nvidia.com/gpu", 20}}},
      {"time-slicing-rename.yaml", 2, false, {{"nvidia.com/gpu.shared", 8}}},
      {"mps.yaml", 2, false, {{"nvidia.com/gpu", 8}}},
      {"mig-mixed.yaml",
       2,
       true,
       {{"nvidia.com/gpu", 1},
        {"nvidia.com/mig-1g.10gb", 4},
        {"nvidia.com/mig-3g.40gb", 1}}},
      {"some-gpus-shared.json",
       3,
       false,
       {{"nvidia.com/gpu", 1}, {"nvidia.com/shared-gpu", 6}}},
  };
  MigCaps caps = Caps();
  for (const Case& c : cases) {
    Config flags;
    flags.config_file = std::string(GDP_EXAMPLES_DIR) + "/" + c.file;
    absl::StatusOr<Config> config = LoadConfig(flags, {});
    ASSERT_TRUE(config.ok()) << c.file << ": " << config.status();
    auto rs = BuildResources(Node(c.gpus, c.mig), *config, &caps);
    ASSERT_TRUE(rs.ok()) << c.file << ": " << rs.status();
    std::map<std::string, size_t> got;
    for (const Resource& r : *rs) got[r.name] = r.devices.size();
    EXPECT_EQ(got, c.resources) << c.file;
  }
}

TEST(ExamplesTest, ExampleSettingsCarryThrough) {
  Config flags;
  flags.config_file = std::string(GDP_EXAMPLES_DIR) + "/mps.yaml";
  absl::StatusOr<Config> mps = LoadConfig(flags, {});
  ASSERT_TRUE(mps.ok());
  EXPECT_EQ(mps->mps_root, "/run/nvidia/mps");
  auto rs = BuildResources(Node(1, false), *mps, nullptr);
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ((*rs)[0].sharing, SharingStrategy::kMps);
  EXPECT_TRUE((*rs)[0].fail_requests_greater_than_one) << "MPS default";

  flags.config_file = std::string(GDP_EXAMPLES_DIR) + "/some-gpus-shared.json";
  absl::StatusOr<Config> json = LoadConfig(flags, {});
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(json->device_list_strategies,
              ::testing::ElementsAre(DeviceListStrategy::kEnvvar,
                                     DeviceListStrategy::kCdiCri));
}

}  // namespace
}  // namespace gdp
