// nvml-report against the fake NVML: every read is reported with its value
// or NVML's code, and nothing is left changed.
#include "cmd/nvml_report.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testing/temp_dir.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

class NvmlReportTest : public ::testing::Test {
 protected:
  // A driver root whose libnvidia-ml.so.1 is `lib`, on machine `machine`.
  std::unique_ptr<Nvml> Open(const std::string& lib,
                             const std::string& machine) {
    fs::create_directories(root_ / "usr/lib64");
    fs::remove(root_ / "usr/lib64/libnvidia-ml.so.1");
    fs::create_symlink(lib, root_ / "usr/lib64/libnvidia-ml.so.1");
    setenv("FAKE_NVML_MACHINE",
           (std::string(GDP_MACHINES_DIR) + "/" + machine + ".yaml").c_str(),
           1);
    setenv("FAKE_NVML_MIG_STATE", (root_ / "mig-state").c_str(), 1);
    auto nvml = Nvml::Open(root_.string());
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    return nvml.ok() ? std::move(*nvml) : nullptr;
  }
  void TearDown() override { unsetenv("FAKE_NVML_MIG_STATE"); }

  const gdp::testing::TempDir tmp_{"nvml-report"};
  const fs::path root_ = tmp_.path();
};

TEST_F(NvmlReportTest, ReportsEveryGpuAndSignal) {
  std::unique_ptr<Nvml> nvml = Open(GDP_FAKE_NVML_LIB, "hgx-h100");
  ASSERT_NE(nvml, nullptr);
  const Json r = NvmlReport(*nvml, "");
  ASSERT_TRUE(r["device_count"]["ok"].get<bool>()) << r.dump(1);
  const unsigned count = r["device_count"]["value"];
  ASSERT_EQ(r["gpus"].size(), count);
  ASSERT_GT(count, 0u);
  const Json& g = r["gpus"][0];
  EXPECT_TRUE(g["uuid"]["ok"].get<bool>());
  EXPECT_EQ(g["uuid"]["value"].get<std::string>().rfind("GPU-", 0), 0u);
  EXPECT_EQ(g["compute_capability"]["value"], "9.0");
  for (const char* s : {"remapped_rows", "pcie_link", "throttle_reasons",
                        "reset_markers", "retired_pages_pending"}) {
    ASSERT_TRUE(g["signals"].contains(s)) << s;
    // Each read is a value or a code, and timed.
    EXPECT_TRUE(g["signals"][s].contains("us")) << s;
    if (!g["signals"][s]["ok"].get<bool>()) {
      EXPECT_TRUE(g["signals"][s].contains("code")) << s;
    }
  }
  EXPECT_TRUE(g["events"]["register"]["xid"]["ok"].get<bool>())
      << g["events"].dump();
  // The MIG profiles of an H100 with their possible placements: 1g.10gb
  // (profile 0) fits seven times.
  const Json& p0 = g["mig"]["profiles"][0];
  EXPECT_EQ(p0["instances"], 7) << p0.dump();
  ASSERT_TRUE(p0["placements"]["ok"].get<bool>()) << p0.dump();
  EXPECT_EQ(p0["placements"]["value"].size(), 7u);
}

TEST_F(NvmlReportTest, MemoryLimitsReadOnlyWhenTheLibraryHasThem) {
  std::unique_ptr<Nvml> nvml = Open(GDP_FAKE_NVML_LIB, "hgx-h100-r615");
  ASSERT_NE(nvml, nullptr);
  fs::create_directories(root_ / "cg");
  const Json r = NvmlReport(*nvml, (root_ / "cg").string());
  EXPECT_TRUE(r["entry_points"]["memory_limits"].get<bool>());
  // Not a cgroup2 directory here: NVML's answer is recorded, not a crash.
  EXPECT_TRUE(r["gpus"][0].contains("memory_limits")) << r["gpus"][0].dump();
}

TEST_F(NvmlReportTest, MemoryLimitsOfAnOlderDriverAreNotSupported) {
  // The library has the entry points; the 550 driver of the machine file
  // answers NOT_SUPPORTED, which the report keeps.
  std::unique_ptr<Nvml> nvml = Open(GDP_FAKE_NVML_LIB, "hgx-h100");
  ASSERT_NE(nvml, nullptr);
  fs::create_directories(root_ / "cg");
  const Json r = NvmlReport(*nvml, (root_ / "cg").string());
  const Json& l = r["gpus"][0]["memory_limits"];
  EXPECT_FALSE(l["ok"].get<bool>()) << l.dump();
  EXPECT_EQ(l["code"], NVML_ERROR_NOT_SUPPORTED) << l.dump();
}

TEST_F(NvmlReportTest, OldLibraryWithoutMig) {
  std::unique_ptr<Nvml> nvml = Open(GDP_FAKE_NVML_PRE_MIG_LIB, "dgx-a100");
  ASSERT_NE(nvml, nullptr);
  const Json r = NvmlReport(*nvml, "/sys/fs/cgroup");
  EXPECT_FALSE(r["entry_points"]["mig"].get<bool>());
  const Json& p0 = r["gpus"][0]["mig"]["profiles"][0];
  EXPECT_EQ(p0["code"], NVML_ERROR_FUNCTION_NOT_FOUND) << p0.dump();
  EXPECT_FALSE(r["gpus"][0].contains("memory_limits"));
}

// The fake against the real driver: the report of the machine we met
// (fake_nvml/machines/h100-vm-580.yaml: one H100 80GB HBM3 in a VM, driver
// 580.159.04), made on it by this command and stored with its timings
// ("us") and error texts stripped, must equal the fake's field for field,
// codes and values, but for the library path. R580's library has no
// memory-limit calls: the pre-limits build stands for it. Differences the
// fake cannot model: none.
TEST_F(NvmlReportTest, FakeMatchesTheRealH100) {
  std::unique_ptr<Nvml> nvml =
      Open(GDP_FAKE_NVML_PRE_LIMITS_LIB, "h100-vm-580");
  ASSERT_NE(nvml, nullptr);
  const fs::path fixture = fs::path(GDP_MACHINES_DIR) / ".." / "testdata" /
                           "real-h100-580-nvml-report.json";
  std::ifstream in(fixture);
  ASSERT_TRUE(in.good()) << fixture;
  const Json parsed = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(parsed.is_discarded()) << fixture << " is not JSON";
  // Drops what differs by run (timings, error texts) and by install
  // (library path), recursively.
  auto comparable = [](Json j) {
    std::vector<Json*> stack{&j};
    while (!stack.empty()) {
      Json* v = stack.back();
      stack.pop_back();
      if (v->is_object()) {
        v->erase("us");
        v->erase("error");
      }
      if (v->is_structured()) {
        for (Json& child : *v) stack.push_back(&child);
      }
    }
    j.erase("library");
    return j;
  };
  const Json real = comparable(parsed);
  const Json fake = comparable(NvmlReport(*nvml, ""));
  EXPECT_TRUE(fake == real)
      << "the fake's report differs from the real driver's (JSON patch, fake "
         "-> real): "
      << Json::diff(fake, real).dump(1);
}

}  // namespace
}  // namespace gdp
