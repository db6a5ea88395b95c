// The dynamic MIG device model read from the fake NVML's H100 and A100
// (fake_nvml/mig_profiles.cc holds the figures of `nvidia-smi mig -lgip`).
#include "device/mig_profiles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device/gpu.h"
#include "nvml/nvml.h"
#include "testing/temp_dir.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class MigProfilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "usr/lib64");
    setenv("FAKE_NVML_CONTROL", (root_ / "control").c_str(), 1);
  }
  void TearDown() override {
    nvml_.reset();
    unsetenv("FAKE_NVML_CONTROL");
  }
  void Open(const std::string& machine,
            const std::string& library = GDP_FAKE_NVML_LIB) {
    nvml_.reset();
    fs::remove(root_ / "usr/lib64/libnvidia-ml.so.1");
    fs::create_symlink(library, root_ / "usr/lib64/libnvidia-ml.so.1");
    setenv("FAKE_NVML_MACHINE",
           (std::string(GDP_MACHINES_DIR) + "/" + machine + ".yaml").c_str(),
           1);
    auto nvml = Nvml::Open(root_.string());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
  }
  nvmlDevice_t Gpu(unsigned index) { return *nvml_->DeviceByIndex(index); }

  const gdp::testing::TempDir tmp_{"mig-profiles"};
  const fs::path root_ = tmp_.path();
  std::unique_ptr<Nvml> nvml_;
};

// The starts of `p`'s placements, each checked to be of one size.
std::vector<unsigned> Starts(const MigProfilePlacements& p, unsigned size) {
  std::vector<unsigned> starts;
  for (const nvmlGpuInstancePlacement_t& pl : p.placements) {
    EXPECT_EQ(pl.size, size) << p.name << " at " << pl.start;
    starts.push_back(pl.start);
  }
  return starts;
}

TEST_F(MigProfilesTest, H100WithMigOnOrOff) {
  Open("h100-mig");
  const struct {
    unsigned profile, profile_id, ci_profile_id;
    const char* name;
    unsigned slices;
    uint64_t memory_mib;
    unsigned sms, copy, dec, enc, jpeg, ofa;
    unsigned memory_slices;
    std::vector<unsigned> starts;
  } kWant[] = {
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE,
       19,
       NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
       "1g.10gb",
       1,
       9984,
       16,
       1,
       1,
       0,
       1,
       0,
       1,
       {0, 1, 2, 3, 4, 5, 6}},
      {NVML_GPU_INSTANCE_PROFILE_2_SLICE,
       14,
       NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
       "2g.20gb",
       2,
       20096,
       32,
       2,
       2,
       0,
       2,
       0,
       2,
       {0, 2, 4}},
      {NVML_GPU_INSTANCE_PROFILE_3_SLICE,
       9,
       NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
       "3g.40gb",
       3,
       40448,
       60,
       3,
       3,
       0,
       3,
       0,
       4,
       {0, 4}},
      {NVML_GPU_INSTANCE_PROFILE_4_SLICE,
       5,
       NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
       "4g.40gb",
       4,
       40448,
       64,
       4,
       4,
       0,
       4,
       0,
       4,
       {0}},
      {NVML_GPU_INSTANCE_PROFILE_7_SLICE,
       0,
       NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE,
       "7g.80gb",
       7,
       81152,
       132,
       8,
       7,
       0,
       7,
       1,
       8,
       {0}},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1,
       20,
       NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
       "1g.10gb+me",
       1,
       9984,
       16,
       1,
       1,
       0,
       1,
       1,
       1,
       {0, 1, 2, 3, 4, 5, 6}},
      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2,
       15,
       NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
       "1g.20gb",
       1,
       20096,
       26,
       1,
       1,
       0,
       1,
       0,
       2,
       {0, 2, 4, 6}},
  };
  // GPU 0 has MIG on (and full), GPU 1 MIG off: the same profiles.
  for (unsigned index : {0u, 1u}) {
    SCOPED_TRACE(index);
    auto profiles = ReadMigProfiles(*nvml_, Gpu(index));
    ASSERT_TRUE(profiles.ok()) << profiles.status();
    ASSERT_EQ(profiles->size(), std::size(kWant));
    for (size_t i = 0; i < std::size(kWant); ++i) {
      const auto& w = kWant[i];
      const MigProfilePlacements& p = (*profiles)[i];
      SCOPED_TRACE(w.name);
      EXPECT_EQ(p.profile, w.profile);
      EXPECT_EQ(p.profile_id, w.profile_id);
      EXPECT_EQ(p.ci_profile_id, w.ci_profile_id);
      EXPECT_EQ(p.name, w.name);
      EXPECT_EQ(p.slice_count, w.slices);
      EXPECT_EQ(p.memory_mib, w.memory_mib);
      EXPECT_EQ(p.multiprocessors, w.sms);
      EXPECT_EQ(p.copy_engines, w.copy);
      EXPECT_EQ(p.decoders, w.dec);
      EXPECT_EQ(p.encoders, w.enc);
      EXPECT_EQ(p.jpegs, w.jpeg);
      EXPECT_EQ(p.ofas, w.ofa);
      EXPECT_EQ(Starts(p, w.memory_slices), w.starts);
    }
    // NVIDIA's counter set of the GPU: the largest of each capacity, and 8
    // memory slices.
    EXPECT_EQ(GpuCounters(*profiles), (MigGpuCounters{.memory_mib = 81152,
                                                      .multiprocessors = 132,
                                                      .copy_engines = 8,
                                                      .decoders = 7,
                                                      .encoders = 0,
                                                      .jpegs = 7,
                                                      .ofas = 1,
                                                      .memory_slices = 8}));
  }
}

TEST_F(MigProfilesTest, NamesFollowEachProduct) {
  const struct {
    const char* machine;
    std::vector<std::string> names;
  } kCases[] = {
      {"dgx-a100",
       {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.10gb+me",
        "1g.20gb"}},
      {"hgx-h100-mig7",
       {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.10gb+me",
        "1g.20gb"}},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.machine);
    Open(c.machine);
    auto profiles = ReadMigProfiles(*nvml_, Gpu(0));
    ASSERT_TRUE(profiles.ok()) << profiles.status();
    std::vector<std::string> names;
    for (const MigProfilePlacements& p : *profiles) names.push_back(p.name);
    EXPECT_EQ(names, c.names);
  }
}

TEST_F(MigProfilesTest, GpuWithoutMigIsNotSupported) {
  Open("pcie-t4");
  auto profiles = ReadMigProfiles(*nvml_, Gpu(0));
  EXPECT_EQ(profiles.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(NvmlCode(profiles.status()), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(GpuCounters({}), MigGpuCounters{});
}

TEST_F(MigProfilesTest, DriverWithoutMigNamesTheCall) {
  Open("h100-mig", GDP_FAKE_NVML_PRE_MIG_LIB);
  auto profiles = ReadMigProfiles(*nvml_, Gpu(0));
  EXPECT_EQ(NvmlCode(profiles.status()), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_THAT(std::string(profiles.status().message()),
              HasSubstr("nvmlDeviceGetGpuInstanceProfileInfo"));
  EXPECT_THAT(std::string(profiles.status().message()),
              HasSubstr("MIG profile 0"));
}

TEST_F(MigProfilesTest, DiscoveryFillsMigEnabledGpusWhenAsked) {
  Open("h100-mig");
  const std::string sysfs = (root_ / "no-sys").string();
  auto plain = DiscoverGpus(*nvml_, sysfs);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_EQ(plain->gpus.size(), 2u);
  EXPECT_TRUE(plain->gpus[0].mig_profiles.empty());

  auto dynamic = DiscoverGpus(*nvml_, sysfs, nullptr,
                              DiscoverOptions{.mig_profiles = true});
  ASSERT_TRUE(dynamic.ok()) << dynamic.status();
  ASSERT_EQ(dynamic->gpus.size(), 2u);
  auto want = ReadMigProfiles(*nvml_, Gpu(0));
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(dynamic->gpus[0].mig_profiles, *want);
  // GPU 1 is MIG capable with MIG off: not offered for dynamic MIG.
  EXPECT_TRUE(dynamic->gpus[1].mig_capable);
  EXPECT_TRUE(dynamic->gpus[1].mig_profiles.empty());
  EXPECT_TRUE(dynamic->unusable.empty());
  // Its static MIG devices are still discovered.
  EXPECT_EQ(dynamic->gpus[0].migs.size(), 4u);
}

TEST_F(MigProfilesTest, DiscoveryOfAGpuWithoutMigAddsNothing) {
  Open("pcie-t4");
  auto node = DiscoverGpus(*nvml_, (root_ / "no-sys").string(), nullptr,
                           DiscoverOptions{.mig_profiles = true});
  ASSERT_TRUE(node.ok()) << node.status();
  ASSERT_FALSE(node->gpus.empty());
  EXPECT_TRUE(node->unusable.empty());
  for (const GpuInfo& g : node->gpus) EXPECT_TRUE(g.mig_profiles.empty());
}

}  // namespace
}  // namespace gdp
