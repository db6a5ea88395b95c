// Init reference counting, UNINITIALIZED, nvmlErrorString, system queries
// and the exported symbol set.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

using InitTest = FakeNvmlTest;

TEST_F(InitTest, ExportsEveryNvmlFunction) {
  for (const char* name : {"nvmlInit",
                           "nvmlInit_v2",
                           "nvmlInitWithFlags",
                           "nvmlShutdown",
                           "nvmlErrorString",
                           "nvmlSystemGetDriverVersion",
                           "nvmlSystemGetCudaDriverVersion",
                           "nvmlSystemGetCudaDriverVersion_v2",
                           "nvmlDeviceGetCount",
                           "nvmlDeviceGetCount_v2",
                           "nvmlDeviceGetHandleByIndex",
                           "nvmlDeviceGetHandleByIndex_v2",
                           "nvmlDeviceGetHandleByUUID",
                           "nvmlDeviceGetHandleByPciBusId",
                           "nvmlDeviceGetHandleByPciBusId_v2",
                           "nvmlDeviceGetName",
                           "nvmlDeviceGetUUID",
                           "nvmlDeviceGetMinorNumber",
                           "nvmlDeviceGetIndex",
                           "nvmlDeviceGetPciInfo",
                           "nvmlDeviceGetPciInfo_v2",
                           "nvmlDeviceGetPciInfo_v3",
                           "nvmlDeviceGetMemoryInfo",
                           "nvmlDeviceGetMemoryInfo_v2",
                           "nvmlDeviceGetCudaComputeCapability",
                           "nvmlDeviceGetMigMode",
                           "nvmlDeviceGetTopologyCommonAncestor",
                           "nvmlDeviceGetNvLinkState",
                           "nvmlDeviceGetNvLinkRemotePciInfo_v2",
                           "nvmlDeviceGetNvLinkRemoteDeviceType",
                           "nvmlEventSetCreate",
                           "nvmlDeviceRegisterEvents",
                           "nvmlDeviceGetSupportedEventTypes",
                           "nvmlEventSetWait",
                           "nvmlEventSetWait_v2",
                           "nvmlEventSetFree"}) {
    EXPECT_NE(Symbol(name), nullptr) << name;
  }
  // Internals stay hidden.
  EXPECT_EQ(Symbol("_ZN3gdp9fake_nvml11state_mutexE"), nullptr);
}

TEST_F(InitTest, CallsBeforeInitAreUninitialized) {
  unsigned count = 0;
  nvmlDevice_t device = nullptr;
  char text[96];
  int version = 0;
  nvmlEventSet_t set = nullptr;
  EXPECT_EQ(NVML(nvmlShutdown)(), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(0, &device),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(NVML(nvmlSystemGetDriverVersion)(text, sizeof(text)),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(NVML(nvmlSystemGetCudaDriverVersion)(&version),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(NVML(nvmlDeviceGetName)(device, text, sizeof(text)),
            NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(NVML(nvmlEventSetCreate)(&set), NVML_ERROR_UNINITIALIZED);
}

TEST_F(InitTest, InitIsReferenceCounted) {
  UseMachine(ShippedMachine("pcie-t4.yaml"));
  ASSERT_EQ(NVML(nvmlInit)(), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlInitWithFlags)(0), NVML_SUCCESS);
  unsigned count = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS) << i;
    EXPECT_EQ(count, 2u);
    EXPECT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS) << i;
  }
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(NVML(nvmlShutdown)(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(InitTest, HandlesFromBeforeShutdownAreInvalid) {
  InitWith("pcie-t4.yaml");
  const nvmlDevice_t old_handle = Device(0);
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  unsigned minor = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetMinorNumber)(old_handle, &minor),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetMinorNumber)(Device(0), &minor), NVML_SUCCESS);
}

TEST_F(InitTest, ErrorStringsWorkWithoutInit) {
  const struct {
    nvmlReturn_t code;
    const char* text;
  } kCases[] = {
      {NVML_SUCCESS, "Success"},
      {NVML_ERROR_UNINITIALIZED, "Uninitialized"},
      {NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument"},
      {NVML_ERROR_NOT_SUPPORTED, "Not Supported"},
      {NVML_ERROR_NOT_FOUND, "Not Found"},
      {NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size"},
      {NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"},
      {NVML_ERROR_TIMEOUT, "Timeout"},
      {NVML_ERROR_GPU_IS_LOST, "GPU is lost"},
      {NVML_ERROR_UNKNOWN, "Unknown Error"},
      {static_cast<nvmlReturn_t>(777), "Unknown Error"},
  };
  for (const auto& c : kCases) {
    const char* text = NVML(nvmlErrorString)(c.code);
    ASSERT_NE(text, nullptr) << c.code;
    EXPECT_STREQ(text, c.text) << c.code;
  }
  for (int code = 0; code <= 1000; ++code) {
    EXPECT_NE(NVML(nvmlErrorString)(static_cast<nvmlReturn_t>(code)), nullptr);
  }
}

TEST_F(InitTest, MissingMachineVariableMeansNoDriver) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, StartsWith("fake NVML: "));
  EXPECT_THAT(err, HasSubstr("FAKE_NVML_MACHINE"));
  unsigned count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_ERROR_UNINITIALIZED);
}

TEST_F(InitTest, MissingMachineFileMeansNoDriver) {
  const std::string path = dir_ + "/absent.yaml";
  UseMachine(path);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, StartsWith("fake NVML: "));
  EXPECT_THAT(err, HasSubstr(path));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
}

TEST_F(InitTest, MachineWithoutGpusNeedsNoGpusFlag) {
  UseMachine(WriteFile("empty.yaml",
                       "driver_version: \"550.54.15\"\n"
                       "cuda_driver_version: 12040\n"
                       "gpus: []\n"));
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_GPU_NOT_FOUND);
  ASSERT_EQ(NVML(nvmlInitWithFlags)(NVML_INIT_FLAG_NO_GPUS), NVML_SUCCESS);
  unsigned count = 99;
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);
}

TEST_F(InitTest, SystemQueries) {
  InitWith("dgx-a100.yaml");
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  EXPECT_EQ(NVML(nvmlSystemGetDriverVersion)(version, sizeof(version)),
            NVML_SUCCESS);
  EXPECT_STREQ(version, "550.54.15");
  int cuda = 0;
  EXPECT_EQ(NVML(nvmlSystemGetCudaDriverVersion)(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 12040);
  cuda = 0;
  EXPECT_EQ(NVML(nvmlSystemGetCudaDriverVersion_v2)(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 12040);
  EXPECT_EQ(NVML(nvmlSystemGetCudaDriverVersion_v2)(nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  // "550.54.15" needs 10 bytes.
  std::memset(version, 'x', sizeof(version));
  EXPECT_EQ(NVML(nvmlSystemGetDriverVersion)(version, 9),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(version[0], 'x');
  EXPECT_EQ(NVML(nvmlSystemGetDriverVersion)(version, 10), NVML_SUCCESS);
  unsigned count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCount)(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 8u);
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
