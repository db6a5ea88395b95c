// The NVML owner against the project's fake libnvidia-ml.so.1, found through
// a driver root as on a real node.
#include "nvml/nvml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        fs::temp_directory_path() / ("gdp-nvml-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "usr/lib64");
    fs::create_symlink(GDP_FAKE_NVML_LIB,
                       root_ / "usr/lib64/libnvidia-ml.so.1");
    control_ = root_ / "control";
    setenv("FAKE_NVML_CONTROL", control_.c_str(), 1);
    UseMachine("dgx-a100");
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_CONTROL");
    fs::remove_all(root_);
  }
  void UseMachine(const std::string& name) {
    setenv("FAKE_NVML_MACHINE",
           (std::string(GDP_MACHINES_DIR) + "/" + name + ".yaml").c_str(), 1);
  }
  void Inject(const std::string& line) {
    std::ofstream(control_, std::ios::app) << line << "\n";
  }

  fs::path root_, control_;
};

TEST_F(NvmlTest, MissingLibraryNamesEveryPathTried) {
  auto nvml = Nvml::Open("/nonexistent-driver-root");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kNotFound);
  std::string msg(nvml.status().message());
  EXPECT_THAT(
      msg, HasSubstr("/nonexistent-driver-root/usr/lib64/libnvidia-ml.so.1"));
  EXPECT_THAT(msg,
              HasSubstr("/nonexistent-driver-root/usr/lib/x86_64-linux-gnu/"));
}

TEST_F(NvmlTest, ReadsTheMachine) {
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  EXPECT_EQ(n.library_path(), (root_ / "usr/lib64/libnvidia-ml.so.1").string());
  EXPECT_EQ(*n.DriverVersion(), "550.54.15");
  EXPECT_EQ(*n.CudaDriverVersion(), 12040);
  ASSERT_EQ(*n.DeviceCount(), 8u);
  nvmlDevice_t d = *n.DeviceByIndex(1);
  EXPECT_EQ(*n.Name(d), "NVIDIA A100-SXM4-80GB");
  EXPECT_THAT(*n.Uuid(d), ::testing::StartsWith("GPU-"));
  EXPECT_EQ(*n.MinorNumber(d), 1u);
  EXPECT_EQ(n.PciInfo(d)->bus, 0x0Fu);
  EXPECT_EQ(*n.MemoryTotal(d), 81920ull << 20);
  EXPECT_EQ(*n.ComputeCapability(d), std::pair(8, 0));
  EXPECT_EQ(*n.MigEnabled(d), false);
  EXPECT_EQ(NvmlCode(n.DeviceByIndex(8).status()), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(NvmlTest, MigUnsupportedIsUnimplemented) {
  UseMachine("pcie-t4");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  auto mig = (*nvml)->MigEnabled(*(*nvml)->DeviceByIndex(0));
  EXPECT_EQ(mig.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(NvmlCode(mig.status()), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(NvmlTest, InitFailureCarriesNvmlCode) {
  unsetenv("FAKE_NVML_MACHINE");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(NvmlCode(nvml.status()), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_THAT(std::string(nvml.status().message()), HasSubstr("nvmlInit_v2"));
}

TEST_F(NvmlTest, LostGpuIsUnavailable) {
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  nvmlDevice_t d = *(*nvml)->DeviceByIndex(2);
  Inject("lose 2");
  absl::Status s;
  for (int i = 0; i < 200; ++i) {
    s = (*nvml)->Uuid(d).status();
    if (!s.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(NvmlCode(s), NVML_ERROR_GPU_IS_LOST);
  EXPECT_THAT(std::string(s.message()), HasSubstr("nvmlDeviceGetUUID"));
}

}  // namespace
}  // namespace gdp
