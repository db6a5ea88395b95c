// The NVML owner against the project's fake libnvidia-ml.so.1, found through
// a driver root as on a real node.
#include "nvml/nvml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "testing/temp_dir.h"
#include "testing/test_cgroup.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "usr/lib64");
    UseLibrary(GDP_FAKE_NVML_LIB);
    control_ = root_ / "control";
    setenv("FAKE_NVML_CONTROL", control_.c_str(), 1);
    UseMachine("dgx-a100");
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_CONTROL");
    unsetenv("FAKE_NVML_EUID");
  }
  // Points the driver root's libnvidia-ml.so.1 at `path`.
  void UseLibrary(const std::string& path) {
    fs::remove(root_ / "usr/lib64/libnvidia-ml.so.1");
    fs::create_symlink(path, root_ / "usr/lib64/libnvidia-ml.so.1");
  }
  void UseMachine(const std::string& name) {
    setenv("FAKE_NVML_MACHINE",
           (std::string(GDP_MACHINES_DIR) + "/" + name + ".yaml").c_str(), 1);
  }
  void Inject(const std::string& line) {
    std::ofstream(control_, std::ios::app) << line << "\n";
  }

  const gdp::testing::TempDir tmp_{"nvml"};
  const fs::path root_ = tmp_.path();
  fs::path control_;
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

TEST_F(NvmlTest, MigDevices) {
  UseMachine("h100-mig");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  EXPECT_TRUE(n.HasMig());
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  EXPECT_EQ(*n.MigEnabled(gpu), true);
  EXPECT_EQ(*n.MigEnabled(*n.DeviceByIndex(1)), false);
  EXPECT_EQ(*n.MaxMigDeviceCount(gpu), 7u);
  EXPECT_EQ(*n.MaxMigDeviceCount(*n.DeviceByIndex(1)), 0u);
  EXPECT_EQ(*n.IsMigDevice(gpu), false);
  const struct {
    unsigned gi;
    unsigned gi_slices;
    unsigned long long memory_mib;
  } kMigs[] = {{2, 3, 40448}, {3, 2, 20096}, {9, 1, 9984}, {10, 1, 9984}};
  for (unsigned j = 0; j < 4; ++j) {
    SCOPED_TRACE(j);
    auto mig = n.MigDeviceByIndex(gpu, j);
    ASSERT_TRUE(mig.ok()) << mig.status();
    EXPECT_EQ(*n.IsMigDevice(*mig), true);
    EXPECT_EQ(*n.MigParent(*mig), gpu);
    EXPECT_THAT(*n.Uuid(*mig), ::testing::StartsWith("MIG-"));
    EXPECT_EQ(*n.MemoryTotal(*mig), kMigs[j].memory_mib << 20);
    EXPECT_EQ(*n.GpuInstanceId(*mig), kMigs[j].gi);
    EXPECT_EQ(*n.ComputeInstanceId(*mig), 0u);
    auto attributes = n.Attributes(*mig);
    ASSERT_TRUE(attributes.ok()) << attributes.status();
    EXPECT_EQ(attributes->gpuInstanceSliceCount, kMigs[j].gi_slices);
    EXPECT_EQ(attributes->computeInstanceSliceCount, kMigs[j].gi_slices);
    EXPECT_EQ(attributes->memorySizeMB, kMigs[j].memory_mib);
    auto gi = n.GpuInstanceById(gpu, kMigs[j].gi);
    ASSERT_TRUE(gi.ok()) << gi.status();
    EXPECT_EQ(n.GpuInstanceInfo(*gi)->id, kMigs[j].gi);
  }
  auto none = n.MigDeviceByIndex(gpu, 4);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(NvmlCode(none.status()), NVML_ERROR_NOT_FOUND);
  EXPECT_THAT(std::string(none.status().message()),
              HasSubstr("nvmlDeviceGetMigDeviceHandleByIndex"));
  EXPECT_EQ(n.GpuInstanceId(gpu).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(n.GpuInstanceById(gpu, 0).status().code(),
            absl::StatusCode::kNotFound);
  auto rev1 =
      n.GpuInstanceProfileInfo(gpu, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1);
  ASSERT_TRUE(rev1.ok()) << rev1.status();
  EXPECT_EQ(rev1->id, 20u);
  EXPECT_EQ(
      NvmlCode(n.GpuInstanceProfileInfo(gpu, NVML_GPU_INSTANCE_PROFILE_8_SLICE)
                   .status()),
      NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(NvmlTest, DriverWithoutMigStillLoads) {
  UseLibrary(GDP_FAKE_NVML_PRE_MIG_LIB);
  UseMachine("h100-mig");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  EXPECT_FALSE(n.HasMig());
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  EXPECT_THAT(*n.Uuid(gpu), ::testing::StartsWith("GPU-"));
  const absl::Status statuses[] = {
      n.MigEnabled(gpu).status(), n.MaxMigDeviceCount(gpu).status(),
      n.MigDeviceByIndex(gpu, 0).status(), n.GpuInstanceId(gpu).status()};
  const char* kCalls[] = {
      "nvmlDeviceGetMigMode", "nvmlDeviceGetMaxMigDeviceCount",
      "nvmlDeviceGetMigDeviceHandleByIndex", "nvmlDeviceGetGpuInstanceId"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(statuses[i].code(), absl::StatusCode::kUnimplemented);
    EXPECT_EQ(NvmlCode(statuses[i]), NVML_ERROR_FUNCTION_NOT_FOUND);
    EXPECT_THAT(std::string(statuses[i].message()), HasSubstr(kCalls[i]));
  }
}

TEST_F(NvmlTest, BrandAndArchitecture) {
  const struct {
    const char* machine;
    nvmlBrandType_t brand;
    nvmlDeviceArchitecture_t architecture;
  } kMachines[] = {
      {"dgx-a100", NVML_BRAND_NVIDIA, NVML_DEVICE_ARCH_AMPERE},
      {"dgx1-v100", NVML_BRAND_TESLA, NVML_DEVICE_ARCH_VOLTA},
      {"pcie-t4", NVML_BRAND_TESLA, NVML_DEVICE_ARCH_TURING},
      {"pcie-4gpu-2switch", NVML_BRAND_NVIDIA, NVML_DEVICE_ARCH_ADA},
      {"h100-mig", NVML_BRAND_NVIDIA, NVML_DEVICE_ARCH_HOPPER},
  };
  for (const auto& m : kMachines) {
    SCOPED_TRACE(m.machine);
    UseMachine(m.machine);
    auto nvml = Nvml::Open(root_.string());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvmlDevice_t gpu = *(*nvml)->DeviceByIndex(0);
    auto brand = (*nvml)->Brand(gpu);
    ASSERT_TRUE(brand.ok()) << brand.status();
    EXPECT_EQ(*brand, m.brand);
    auto architecture = (*nvml)->Architecture(gpu);
    ASSERT_TRUE(architecture.ok()) << architecture.status();
    EXPECT_EQ(*architecture, m.architecture);
  }
  // A MIG device answers for its GPU.
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  auto mig = (*nvml)->MigDeviceByIndex(*(*nvml)->DeviceByIndex(0), 0);
  ASSERT_TRUE(mig.ok()) << mig.status();
  EXPECT_EQ(*(*nvml)->Brand(*mig), NVML_BRAND_NVIDIA);
  EXPECT_EQ(*(*nvml)->Architecture(*mig), NVML_DEVICE_ARCH_HOPPER);
}

TEST_F(NvmlTest, DriverWithoutArchitectureStillHasBrand) {
  UseLibrary(GDP_FAKE_NVML_PRE_MIG_LIB);
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  nvmlDevice_t gpu = *(*nvml)->DeviceByIndex(0);
  EXPECT_EQ(*(*nvml)->Brand(gpu), NVML_BRAND_NVIDIA);
  auto architecture = (*nvml)->Architecture(gpu);
  EXPECT_EQ(architecture.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(NvmlCode(architecture.status()), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_THAT(std::string(architecture.status().message()),
              HasSubstr("nvmlDeviceGetArchitecture"));
}

TEST_F(NvmlTest, HealthSignals) {
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  nvmlDevice_t gpu = *(*nvml)->DeviceByIndex(0);
  absl::StatusOr<NvmlRemappedRows> rows = (*nvml)->RemappedRows(gpu);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_FALSE(rows->pending);
  EXPECT_FALSE(rows->failure);
  // Ampere and later remap rows instead of retiring pages.
  EXPECT_EQ(NvmlCode((*nvml)->RetiredPagesPending(gpu).status()),
            NVML_ERROR_NOT_SUPPORTED);
  absl::StatusOr<NvmlPcieLink> link = (*nvml)->PcieLink(gpu);
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(link->gen, link->max_gen);
  EXPECT_EQ(link->width, 16u);
  EXPECT_EQ(*(*nvml)->ThrottleReasons(gpu), nvmlClocksThrottleReasonGpuIdle);
  // R550: no recovery action field; the volatile ECC counts are there.
  absl::StatusOr<NvmlResetMarkers> markers = (*nvml)->ResetMarkers(gpu);
  ASSERT_TRUE(markers.ok()) << markers.status();
  EXPECT_EQ(*markers, (NvmlResetMarkers{std::nullopt, 0, 0}));
  nvmlDevice_t gpu1 = *(*nvml)->DeviceByIndex(1);
  Inject("ecc 0 double");
  Inject("lose 1");
  const absl::Time limit = absl::Now() + absl::Seconds(5);
  // (The fake applies the two lines in turn: wait for both.)
  while (absl::Now() < limit &&
         ((*nvml)->ResetMarkers(gpu)->volatile_dbe != 1u ||
          (*nvml)->ResetMarkers(gpu1).ok())) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ((*nvml)->ResetMarkers(gpu)->volatile_dbe, 1u);
  EXPECT_EQ(NvmlCode((*nvml)->ResetMarkers(gpu1).status()),
            NVML_ERROR_GPU_IS_LOST);
}

TEST_F(NvmlTest, DriverWithoutRemappedRowsReadsTheOtherSignals) {
  UseLibrary(GDP_FAKE_NVML_PRE_MIG_LIB);
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  nvmlDevice_t gpu = *(*nvml)->DeviceByIndex(0);
  absl::Status rows = (*nvml)->RemappedRows(gpu).status();
  EXPECT_EQ(rows.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(NvmlCode(rows), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_THAT(std::string(rows.message()),
              HasSubstr("nvmlDeviceGetRemappedRows"));
  EXPECT_TRUE((*nvml)->PcieLink(gpu).ok());
  EXPECT_TRUE((*nvml)->ThrottleReasons(gpu).ok());
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

TEST_F(NvmlTest, DeviceByUuid) {
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  nvmlDevice_t d = *n.DeviceByIndex(5);
  auto found = n.DeviceByUuid(*n.Uuid(d));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, d);
  auto missing = n.DeviceByUuid("GPU-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(NvmlCode(missing.status()), NVML_ERROR_NOT_FOUND);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("nvmlDeviceGetHandleByUUID"));
}

TEST_F(NvmlTest, EventSetDeliversXidsWithTheirInstance) {
  UseMachine("h100-mig");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  const unsigned long long kHealth = nvmlEventTypeXidCriticalError |
                                     nvmlEventTypeSingleBitEccError |
                                     nvmlEventTypeDoubleBitEccError;
  EXPECT_EQ(*n.SupportedEventTypes(gpu) & kHealth, kHealth);
  auto set = n.CreateEventSet();
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_TRUE((*set)->Register(gpu, kHealth).ok());
  // Unsupported types register nothing: nvmlEventTypeSingleBitEccErrorStorm
  // (0x200) came with R560, after this machine's R550 driver.
  absl::Status storm = (*set)->Register(gpu, 0x200);
  EXPECT_EQ(storm.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(NvmlCode(storm), NVML_ERROR_NOT_SUPPORTED);

  auto none = (*set)->Wait(absl::Milliseconds(5));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(NvmlCode(none.status()), NVML_ERROR_TIMEOUT);

  Inject("xid 0 94 9 0");
  Inject("ecc 0 double");
  Inject("xid 1 79");  // GPU 1 is not registered
  auto xid = (*set)->Wait(absl::Seconds(2));
  ASSERT_TRUE(xid.ok()) << xid.status();
  EXPECT_EQ(xid->device, gpu);
  EXPECT_EQ(xid->type,
            static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
  EXPECT_EQ(xid->data, 94u);
  EXPECT_EQ(xid->gpu_instance_id, 9u);
  EXPECT_EQ(xid->compute_instance_id, 0u);
  auto ecc = (*set)->Wait(absl::Seconds(2));
  ASSERT_TRUE(ecc.ok()) << ecc.status();
  EXPECT_EQ(ecc->type,
            static_cast<unsigned long long>(nvmlEventTypeDoubleBitEccError));
  EXPECT_EQ(ecc->gpu_instance_id, kNvmlAllInstances);
  EXPECT_EQ(ecc->compute_instance_id, kNvmlAllInstances);
  EXPECT_EQ(NvmlCode((*set)->Wait(absl::Milliseconds(20)).status()),
            NVML_ERROR_TIMEOUT);
}

TEST_F(NvmlTest, EventWaitReportsNvmlFailing) {
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  auto set = (*nvml)->CreateEventSet();
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_TRUE(
      (*set)
          ->Register(*(*nvml)->DeviceByIndex(0), nvmlEventTypeXidCriticalError)
          .ok());
  Inject("fail 999");
  auto waited = (*set)->Wait(absl::Seconds(2));
  EXPECT_EQ(NvmlCode(waited.status()), NVML_ERROR_UNKNOWN);
  EXPECT_THAT(std::string(waited.status().message()),
              HasSubstr("nvmlEventSetWait_v2"));
  EXPECT_EQ(NvmlCode((*nvml)->CreateEventSet().status()), NVML_ERROR_UNKNOWN);
  Inject("recover");
}

// Per-cgroup memory limits (R615). The fake keeps them beside the control
// file, so they last as long as the test's driver root.
class NvmlMemoryLimitsTest : public NvmlTest {
 protected:
  void SetUp() override {
    NvmlTest::SetUp();
    if (!cgroup_.ok()) GTEST_SKIP() << cgroup_.error();
    a_ = cgroup_.Child("a");
    ASSERT_FALSE(a_.empty());
  }
  // `name`.yaml with its driver made R615 (615.20.01), as the machine.
  void UseR615(const std::string& name) {
    std::ifstream in(std::string(GDP_MACHINES_DIR) + "/" + name + ".yaml");
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    const size_t at = text.find("\"550.54.15\"");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 11, "\"615.20.01\"");
    const fs::path path = root_ / (name + "-r615.yaml");
    std::ofstream(path) << text;
    setenv("FAKE_NVML_MACHINE", path.c_str(), 1);
  }

  gdp::testing::TestCgroup cgroup_{"gdp-nvml-test"};
  std::string a_;
};

TEST_F(NvmlMemoryLimitsTest, SetGetAndClear) {
  UseMachine("hgx-h100-r615");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  EXPECT_TRUE(n.HasMemoryLimits());
  nvmlDevice_t gpu = *n.DeviceByIndex(3);
  constexpr unsigned long long kGiB = 1ull << 30;
  const struct {
    unsigned long long soft, hard;
  } kSteps[] = {{0, 10 * kGiB}, {kGiB, 2 * kGiB}, {0, kNvmlMemoryLimitMax}};
  auto got = n.GetMemoryLimits(gpu, a_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, NvmlMemoryLimits{}) << "nothing set: soft 0, hard max";
  for (const auto& step : kSteps) {
    SCOPED_TRACE(step.hard);
    ASSERT_TRUE(n.SetMemoryLimits(gpu, a_, step.soft, step.hard).ok());
    got = n.GetMemoryLimits(gpu, a_);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, (NvmlMemoryLimits{step.soft, step.hard, 0}));
    auto other = n.GetMemoryLimits(*n.DeviceByIndex(4), a_);
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_EQ(*other, NvmlMemoryLimits{}) << "another GPU";
  }
}

TEST_F(NvmlMemoryLimitsTest, Refusals) {
  UseR615("h100-mig");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  nvmlDevice_t mig_enabled = *n.DeviceByIndex(0);
  nvmlDevice_t plain = *n.DeviceByIndex(1);
  nvmlDevice_t mig = *n.MigDeviceByIndex(mig_enabled, 0);
  const std::string not_cgroup = root_.string();
  const struct {
    const char* what;
    nvmlDevice_t device;
    std::string cgroup;
    unsigned long long soft, hard;
    absl::StatusCode code;
    nvmlReturn_t nvml;
  } kCases[] = {
      {"MIG device", mig, a_, 0, 1 << 20, absl::StatusCode::kUnimplemented,
       NVML_ERROR_NOT_SUPPORTED},
      {"GPU with MIG enabled", mig_enabled, a_, 0, 1 << 20,
       absl::StatusCode::kUnimplemented, NVML_ERROR_NOT_SUPPORTED},
      {"not a cgroup", plain, not_cgroup, 0, 1 << 20,
       absl::StatusCode::kNotFound, NVML_ERROR_NOT_FOUND},
      {"no such cgroup", plain, a_ + "/gone", 0, 1 << 20,
       absl::StatusCode::kNotFound, NVML_ERROR_NOT_FOUND},
      {"soft above hard", plain, a_, 2 << 20, 1 << 20,
       absl::StatusCode::kInvalidArgument, NVML_ERROR_INVALID_ARGUMENT},
      {"hard above the GPU", plain, a_, 0, 1ull << 40,
       absl::StatusCode::kInvalidArgument, NVML_ERROR_INVALID_ARGUMENT},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.what);
    const absl::Status s =
        n.SetMemoryLimits(c.device, c.cgroup, c.soft, c.hard);
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_EQ(NvmlCode(s), c.nvml);
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("nvmlDeviceSetMemoryLimits_v1"));
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.cgroup));
  }
  EXPECT_EQ(NvmlCode(n.GetMemoryLimits(mig, a_).status()),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NvmlCode(n.GetMemoryLimits(plain, not_cgroup).status()),
            NVML_ERROR_NOT_FOUND);
}

TEST_F(NvmlMemoryLimitsTest, DriverBeforeR615AnswersNotSupported) {
  UseMachine("hgx-h100");  // driver 550
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  EXPECT_TRUE(n.HasMemoryLimits()) << "the library has the entry points";
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  const absl::Status set = n.SetMemoryLimits(gpu, a_, 0, 1 << 30);
  EXPECT_EQ(set.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(NvmlCode(set), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NvmlCode(n.GetMemoryLimits(gpu, a_).status()),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(NvmlMemoryLimitsTest, LibraryWithoutTheEntryPointsStillLoads) {
  UseLibrary(GDP_FAKE_NVML_PRE_LIMITS_LIB);
  UseMachine("hgx-h100-r615");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  EXPECT_FALSE(n.HasMemoryLimits());
  EXPECT_TRUE(n.HasMig());
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  const absl::Status statuses[] = {n.SetMemoryLimits(gpu, a_, 0, 1 << 30),
                                   n.GetMemoryLimits(gpu, a_).status()};
  const char* kCalls[] = {"nvmlDeviceSetMemoryLimits_v1",
                          "nvmlDeviceGetMemoryLimits_v1"};
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(statuses[i].code(), absl::StatusCode::kUnimplemented);
    EXPECT_EQ(NvmlCode(statuses[i]), NVML_ERROR_FUNCTION_NOT_FOUND);
    EXPECT_THAT(std::string(statuses[i].message()), HasSubstr(kCalls[i]));
  }
}

TEST_F(NvmlMemoryLimitsTest, UnprivilegedCallerMayOnlyRead) {
  setenv("FAKE_NVML_EUID", "1000", 1);
  UseMachine("hgx-h100-r615");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  const absl::Status set = n.SetMemoryLimits(gpu, a_, 0, 1 << 30);
  EXPECT_EQ(set.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(NvmlCode(set), NVML_ERROR_NO_PERMISSION);
  auto got = n.GetMemoryLimits(gpu, a_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, NvmlMemoryLimits{});
}

// What GpuInstances reports, compared field by field.
struct GiRow {
  unsigned gi_id, profile_id, start, size;
  std::vector<unsigned> ci_ids;
};

std::vector<GiRow> Rows(const std::vector<Nvml::GpuInstanceState>& gis) {
  std::vector<GiRow> rows;
  for (const Nvml::GpuInstanceState& gi : gis) {
    rows.push_back({gi.gi_id, gi.profile_id, gi.placement.start,
                    gi.placement.size, gi.ci_ids});
  }
  return rows;
}

MATCHER_P(RowsAre, want, "") {
  const std::vector<GiRow>& got = arg;
  if (got.size() != want.size()) {
    *result_listener << "has " << got.size() << " GPU instances";
    return false;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const GiRow& g = got[i];
    const GiRow& w = want[i];
    if (g.gi_id != w.gi_id || g.profile_id != w.profile_id ||
        g.start != w.start || g.size != w.size || g.ci_ids != w.ci_ids) {
      *result_listener << "row " << i << " is GI " << g.gi_id << " profile "
                       << g.profile_id << " at " << g.start << "+" << g.size
                       << " with " << g.ci_ids.size() << " CIs";
      return false;
    }
  }
  return true;
}

TEST_F(NvmlTest, GpuInstancesListsEveryProfileByPlacement) {
  const struct {
    const char* machine;
    std::vector<GiRow> want;
  } kCases[] = {
      // 2g.20gb at 0 (GI 3), 1g.10gb at 2 and 3 (GIs 9, 10), 3g.40gb at 4
      // (GI 2), each with its whole compute instance 0.
      {"h100-mig",
       {{3, 14, 0, 2, {0}},
        {9, 19, 2, 1, {0}},
        {10, 19, 3, 1, {0}},
        {2, 9, 4, 4, {0}}}},
      {"hgx-h100-mig7",
       {{7, 19, 0, 1, {0}},
        {8, 19, 1, 1, {0}},
        {9, 19, 2, 1, {0}},
        {10, 19, 3, 1, {0}},
        {11, 19, 4, 1, {0}},
        {12, 19, 5, 1, {0}},
        {13, 19, 6, 1, {0}}}},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.machine);
    UseMachine(c.machine);
    auto nvml = Nvml::Open(root_.string());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    EXPECT_TRUE((*nvml)->HasMigMaking());
    auto gis = (*nvml)->GpuInstances(*(*nvml)->DeviceByIndex(0));
    ASSERT_TRUE(gis.ok()) << gis.status();
    EXPECT_THAT(Rows(*gis), RowsAre(c.want));
  }
}

TEST_F(NvmlTest, PossiblePlacementsWithMigOnOrOff) {
  UseMachine("h100-mig");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  const struct {
    unsigned profile_id;
    std::vector<std::pair<unsigned, unsigned>> want;  // start, size
  } kCases[] = {
      {19, {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}}},
      {20, {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}}},
      {15, {{0, 2}, {2, 2}, {4, 2}, {6, 2}}},
      {14, {{0, 2}, {2, 2}, {4, 2}}},
      {9, {{0, 4}, {4, 4}}},
      {5, {{0, 4}}},
      {0, {{0, 8}}},
  };
  // GPU 0 has MIG on and full; GPU 1 has MIG off: the same placements.
  for (unsigned index : {0u, 1u}) {
    for (const auto& c : kCases) {
      SCOPED_TRACE(absl::StrCat("GPU ", index, " profile ID ", c.profile_id));
      auto placements = n.GpuInstancePossiblePlacements(*n.DeviceByIndex(index),
                                                        c.profile_id);
      ASSERT_TRUE(placements.ok()) << placements.status();
      std::vector<std::pair<unsigned, unsigned>> got;
      for (const nvmlGpuInstancePlacement_t& p : *placements) {
        got.emplace_back(p.start, p.size);
      }
      EXPECT_EQ(got, c.want);
    }
  }
  auto unknown = n.GpuInstancePossiblePlacements(*n.DeviceByIndex(0), 77);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(NvmlCode(unknown.status()), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("profile ID 77"));
}

TEST_F(NvmlTest, MakesAndDestroysMigInstances) {
  UseMachine("h100-mig");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  nvmlDevice_t gpu = *n.DeviceByIndex(0);

  // An occupied placement: INSUFFICIENT_RESOURCES, told apart from in use.
  auto occupied = n.CreateGpuInstance(gpu, 19, {2, 1});
  EXPECT_EQ(occupied.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(NvmlCode(occupied.status()), NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_THAT(std::string(occupied.status().message()),
              HasSubstr("nvmlDeviceCreateGpuInstanceWithPlacement"));
  EXPECT_THAT(std::string(occupied.status().message()),
              HasSubstr("profile ID 19 at memory slices 2+1"));
  // A GPU instance still holding a compute instance.
  absl::Status in_use = n.DestroyGpuInstance(gpu, 2);
  EXPECT_EQ(in_use.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(NvmlCode(in_use), NVML_ERROR_IN_USE);
  EXPECT_THAT(std::string(in_use.message()), HasSubstr("GPU instance 2"));

  ASSERT_TRUE(n.DestroyComputeInstance(gpu, 2, 0).ok());
  absl::Status gone = n.DestroyComputeInstance(gpu, 2, 0);
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(NvmlCode(gone), NVML_ERROR_NOT_FOUND);
  EXPECT_THAT(std::string(gone.message()),
              HasSubstr("compute instance 0 of GPU instance 2"));
  ASSERT_TRUE(n.DestroyGpuInstance(gpu, 2).ok());
  gone = n.DestroyGpuInstance(gpu, 2);
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(NvmlCode(gone), NVML_ERROR_NOT_FOUND);

  // Slices 4-7 are free: 1g.10gb at 4 and 5, a 1g.20gb at 6-7.
  const struct {
    unsigned profile_id;
    nvmlGpuInstancePlacement_t placement;
    unsigned want_id;
  } kMake[] = {{19, {4, 1}, 11}, {19, {5, 1}, 12}, {15, {6, 2}, 6}};
  for (const auto& m : kMake) {
    auto made = n.CreateGpuInstance(gpu, m.profile_id, m.placement);
    ASSERT_TRUE(made.ok()) << made.status();
    EXPECT_EQ(*made, m.want_id);
  }
  auto gis = n.GpuInstances(gpu);
  ASSERT_TRUE(gis.ok()) << gis.status();
  EXPECT_THAT(Rows(*gis), RowsAre(std::vector<GiRow>{{3, 14, 0, 2, {0}},
                                                     {9, 19, 2, 1, {0}},
                                                     {10, 19, 3, 1, {0}},
                                                     {11, 19, 4, 1, {}},
                                                     {12, 19, 5, 1, {}},
                                                     {6, 15, 6, 2, {}}}));
  // The 7 compute slices are taken: no room for another GPU instance.
  EXPECT_EQ(NvmlCode(n.CreateGpuInstance(gpu, 19, {6, 1}).status()),
            NVML_ERROR_INSUFFICIENT_RESOURCES);
  for (unsigned gi : {11u, 6u}) {
    auto ci =
        n.CreateComputeInstance(gpu, gi, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
    ASSERT_TRUE(ci.ok()) << ci.status();
    EXPECT_EQ(*ci, 0u);
  }
  auto full =
      n.CreateComputeInstance(gpu, 6, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(full.status().message()),
              HasSubstr("compute instance profile ID 0 in GPU instance 6"));
  auto too_big =
      n.CreateComputeInstance(gpu, 12, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE);
  EXPECT_EQ(NvmlCode(too_big.status()), NVML_ERROR_NOT_SUPPORTED);
  auto no_gi =
      n.CreateComputeInstance(gpu, 13, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  EXPECT_EQ(no_gi.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(no_gi.status().message()),
              HasSubstr("GPU instance 13"));

  gis = n.GpuInstances(gpu);
  ASSERT_TRUE(gis.ok()) << gis.status();
  ASSERT_EQ(gis->size(), 6u);
  EXPECT_EQ((*gis)[3].ci_ids, std::vector<unsigned>{0});
  EXPECT_EQ((*gis)[4].ci_ids, std::vector<unsigned>{});
  EXPECT_EQ((*gis)[5].ci_ids, std::vector<unsigned>{0});
  // Its MIG devices follow: one per compute instance.
  unsigned migs = 0;
  for (unsigned i = 0; i < *n.MaxMigDeviceCount(gpu); ++i) {
    if (n.MigDeviceByIndex(gpu, i).ok()) ++migs;
  }
  EXPECT_EQ(migs, 5u);

  // A restarted process finds the same instances (the fake's shared state).
  const std::vector<GiRow> before = Rows(*gis);
  nvml->reset();
  auto again = Nvml::Open(root_.string());
  ASSERT_TRUE(again.ok()) << again.status();
  auto seen = (*again)->GpuInstances(*(*again)->DeviceByIndex(0));
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_THAT(Rows(*seen), RowsAre(before));
}

TEST_F(NvmlTest, NoMigNoMaking) {
  UseMachine("pcie-t4");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  EXPECT_EQ(NvmlCode(n.GpuInstances(gpu).status()), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NvmlCode(n.GpuInstancePossiblePlacements(gpu, 19).status()),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NvmlCode(n.CreateGpuInstance(gpu, 19, {0, 1}).status()),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(NvmlTest, UnprivilegedCallerMayOnlyListMig) {
  setenv("FAKE_NVML_EUID", "1000", 1);
  UseMachine("h100-mig");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  EXPECT_EQ(n.CreateGpuInstance(gpu, 19, {4, 1}).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(n.DestroyComputeInstance(gpu, 3, 0).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(n.DestroyGpuInstance(gpu, 2).code(),
            absl::StatusCode::kPermissionDenied);
  auto gis = n.GpuInstances(gpu);
  ASSERT_TRUE(gis.ok()) << gis.status();
  EXPECT_EQ(gis->size(), 4u);
}

TEST_F(NvmlTest, MigMakingRefusals) {
  UseMachine("h100-mig");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  // GPU 1: MIG capable, MIG off.
  nvmlDevice_t off = *n.DeviceByIndex(1);
  auto listed = n.GpuInstances(off);
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(NvmlCode(listed.status()), NVML_ERROR_NOT_SUPPORTED);
  auto made = n.CreateGpuInstance(off, 19, {0, 1});
  EXPECT_EQ(NvmlCode(made.status()), NVML_ERROR_NOT_SUPPORTED);
  // A placement the profile cannot take (a 3g.40gb at slice 5) and a size
  // other than the profile's.
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  ASSERT_TRUE(n.DestroyComputeInstance(gpu, 2, 0).ok());
  ASSERT_TRUE(n.DestroyGpuInstance(gpu, 2).ok());
  EXPECT_EQ(n.CreateGpuInstance(gpu, 9, {5, 4}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(n.CreateGpuInstance(gpu, 9, {4, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(NvmlTest, BusyComputeInstanceIsInUse) {
  const fs::path machine = root_ / "busy.yaml";
  std::ofstream(machine) << R"(driver_version: "550.54.15"
cuda_driver_version: 12040
gpus:
  - name: NVIDIA H100 80GB HBM3
    uuid: GPU-7c3d1e5a-42b8-9f06-d1a3-5e8b2c4f6a90
    minor: 0
    bus_id: "0000:18:00.0"
    pci_device_id: 0x233010DE
    pci_subsystem_id: 0x16C110DE
    memory_mib: 81559
    compute_capability: "9.0"
    numa_node: 0
    host_bridge: 0
    mig_capable: true
    mig_mode: enabled
    gpu_instances:
      - profile: 3g.40gb
        placement: 4
        compute_instances: [{profile: 3g.40gb, busy: true}]
)";
  setenv("FAKE_NVML_MACHINE", machine.c_str(), 1);
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  absl::Status busy = n.DestroyComputeInstance(gpu, 2, 0);
  EXPECT_EQ(busy.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(NvmlCode(busy), NVML_ERROR_IN_USE);
  EXPECT_THAT(std::string(busy.message()),
              HasSubstr("compute instance 0 of GPU instance 2"));
  auto gis = n.GpuInstances(gpu);
  ASSERT_TRUE(gis.ok()) << gis.status();
  EXPECT_THAT(Rows(*gis), RowsAre(std::vector<GiRow>{{2, 9, 4, 4, {0}}}));
}

TEST_F(NvmlTest, DriverWithoutMigCannotMakeIt) {
  UseLibrary(GDP_FAKE_NVML_PRE_MIG_LIB);
  UseMachine("h100-mig");
  auto nvml = Nvml::Open(root_.string());
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  Nvml& n = **nvml;
  EXPECT_FALSE(n.HasMigMaking());
  nvmlDevice_t gpu = *n.DeviceByIndex(0);
  const struct {
    absl::Status status;
    const char* call;
  } kCases[] = {
      {n.GpuInstancePossiblePlacements(gpu, 19).status(),
       "nvmlDeviceGetGpuInstancePossiblePlacements_v2"},
      {n.CreateGpuInstance(gpu, 19, {4, 1}).status(),
       "nvmlDeviceCreateGpuInstanceWithPlacement"},
      {n.CreateComputeInstance(gpu, 2, 0).status(),
       "nvmlDeviceGetGpuInstanceById"},
      {n.DestroyComputeInstance(gpu, 2, 0), "nvmlDeviceGetGpuInstanceById"},
      {n.DestroyGpuInstance(gpu, 2), "nvmlDeviceGetGpuInstanceById"},
      {n.GpuInstances(gpu).status(), "nvmlDeviceGetMigMode"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.call);
    EXPECT_EQ(c.status.code(), absl::StatusCode::kUnimplemented);
    EXPECT_EQ(NvmlCode(c.status), NVML_ERROR_FUNCTION_NOT_FOUND);
    EXPECT_THAT(std::string(c.status.message()), HasSubstr(c.call));
  }
}

}  // namespace
}  // namespace gdp
