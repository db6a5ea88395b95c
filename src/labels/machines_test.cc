// The labels of every fixture machine (fake NVML + `fake-nvml rootfs`), as
// the label loop writes them, against the expected files in testdata/
// (<case>.labels). GDP_UPDATE_LABELS=1 rewrites those files; check each
// change by hand against GFD's rules (docs/labels.md) before committing it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "labels/label_loop.h"
#include "nvml/nvml.h"
#include "testing/temp_dir.h"
#include "util/file_watcher.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

Sharing Shared(SharingStrategy strategy, const std::string& name, int replicas,
               const std::string& rename = "", bool by_default = false) {
  Sharing s;
  s.strategy = strategy;
  s.rename_by_default = by_default;
  s.fail_requests_greater_than_one = strategy == SharingStrategy::kMps;
  s.resources.push_back({name, rename, {}, replicas});
  return s;
}

struct Case {
  const char* name;  // testdata/<name>.labels
  const char* machine;
  MigStrategy mig = MigStrategy::kNone;
  Sharing sharing = {};
};

const Case kCases[] = {
    {"dgx-a100", "dgx-a100"},
    {"dgx1-v100", "dgx1-v100"},
    {"dgx2-v100", "dgx2-v100"},
    {"h100-mig", "h100-mig"},
    {"hgx-h100-mig7", "hgx-h100-mig7"},
    {"hgx-h100", "hgx-h100"},
    {"hgx-h100-r615", "hgx-h100-r615"},
    {"h100-vm-580", "h100-vm-580"},
    {"pcie-4gpu-2switch", "pcie-4gpu-2switch"},
    {"pcie-t4", "pcie-t4"},
    {"pcie-t4-time-slicing", "pcie-t4", MigStrategy::kNone,
     Shared(SharingStrategy::kTimeSlicing, "nvidia.com/gpu", 4)},
    {"pcie-t4-time-slicing-rename", "pcie-t4", MigStrategy::kNone,
     Shared(SharingStrategy::kTimeSlicing, "nvidia.com/gpu", 4,
            "nvidia.com/t4-shared")},
    {"pcie-t4-time-slicing-rename-by-default", "pcie-t4", MigStrategy::kNone,
     Shared(SharingStrategy::kTimeSlicing, "nvidia.com/gpu", 4, "", true)},
    {"dgx-a100-mps", "dgx-a100", MigStrategy::kNone,
     Shared(SharingStrategy::kMps, "nvidia.com/gpu", 2)},
    {"h100-mig-single", "h100-mig", MigStrategy::kSingle},
    {"h100-mig-mixed", "h100-mig", MigStrategy::kMixed},
    {"hgx-h100-mig7-single", "hgx-h100-mig7", MigStrategy::kSingle},
    {"hgx-h100-mig7-single-time-slicing", "hgx-h100-mig7", MigStrategy::kSingle,
     Shared(SharingStrategy::kTimeSlicing, "nvidia.com/gpu", 3)},
    {"hgx-h100-mig7-mixed", "hgx-h100-mig7", MigStrategy::kMixed},
    {"h100-mig-mixed-time-slicing", "h100-mig", MigStrategy::kMixed,
     Shared(SharingStrategy::kTimeSlicing, "nvidia.com/mig-1g.10gb", 2)},
};

class MachineLabelsTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "drv/usr/lib64");
    fs::create_symlink(GDP_FAKE_NVML_LIB,
                       dir_ / "drv/usr/lib64/libnvidia-ml.so.1");
  }
  void TearDown() override { unsetenv("FAKE_NVML_MACHINE"); }

  static std::string Read(const fs::path& path) {
    return ReadFileOrEmpty(path.string());
  }

  const gdp::testing::TempDir tmp_{"labels"};
  const fs::path dir_ = tmp_.path();
};

TEST_P(MachineLabelsTest, MatchesExpectedFile) {
  const Case& c = GetParam();
  const std::string machine =
      std::string(GDP_MACHINES_DIR) + "/" + c.machine + ".yaml";
  setenv("FAKE_NVML_MACHINE", machine.c_str(), 1);
  const std::string cmd = std::string(GDP_FAKE_NVML_TOOL) +
                          " rootfs --machine " + machine + " --out " +
                          (dir_ / "root").string();
  ASSERT_EQ(system(cmd.c_str()), 0);
  std::ofstream(dir_ / "product_name")
      << "Fixture Server (" << c.machine << ")\n";
  auto nvml = Nvml::Open((dir_ / "drv").string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();

  Config config;
  config.sysfs_root = (dir_ / "root/sys").string();
  config.mig_strategy = c.mig;
  config.sharing = c.sharing;
  config.mps_root = "/run/nvidia/mps";
  config.gfd.machine_type_file = (dir_ / "product_name").string();
  config.gfd.output_file = (dir_ / "out/gfd").string();
  ASSERT_TRUE(Validate(config).ok()) << Validate(config);
  LabelLoop loop(nvml->get(), config,
                 [] { return absl::FromUnixSeconds(1700000000); });
  ASSERT_TRUE(loop.Step().ok());

  const fs::path expected =
      fs::path(GDP_LABELS_TESTDATA) / (std::string(c.name) + ".labels");
  const std::string got = Read(config.gfd.output_file);
  if (getenv("GDP_UPDATE_LABELS") != nullptr) {
    std::ofstream(expected) << got;
  }
  EXPECT_EQ(got, Read(expected)) << "expected file " << expected;
}

INSTANTIATE_TEST_SUITE_P(Machines, MachineLabelsTest,
                         ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.name;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

// Every fixture machine has its none-strategy case.
TEST(MachineLabelsCoverage, EveryMachineIsLabelled) {
  for (const auto& e : fs::directory_iterator(GDP_MACHINES_DIR)) {
    if (e.path().extension() != ".yaml") continue;
    const std::string machine = e.path().stem().string();
    bool found = false;
    for (const Case& c : kCases) {
      found = found || (c.name == machine && c.mig == MigStrategy::kNone &&
                        c.sharing.strategy == SharingStrategy::kNone);
    }
    EXPECT_TRUE(found) << machine << " has no expected labels";
  }
}

}  // namespace
}  // namespace gdp
