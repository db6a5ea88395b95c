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
  EXPECT_EQ(*(*nvml)->ThrottleReasons(gpu), 0u);
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
  EXPECT_EQ(*n.SupportedEventTypes(gpu), kHealth);
  auto set = n.CreateEventSet();
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_TRUE((*set)->Register(gpu, kHealth).ok());
  // Unsupported types register nothing.
  absl::Status pstate = (*set)->Register(gpu, nvmlEventTypePState);
  EXPECT_EQ(pstate.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(NvmlCode(pstate), NVML_ERROR_NOT_SUPPORTED);

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

}  // namespace
}  // namespace gdp
