// Fault injection through the control file: lose/restore, fail/recover,
// malformed lines, and the watcher thread's life cycle.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using ::testing::HasSubstr;

using ControlTest = FakeNvmlTest;

bool Lost(nvmlDevice_t device) {
  unsigned minor = 0;
  return NVML(nvmlDeviceGetMinorNumber)(device, &minor) ==
         NVML_ERROR_GPU_IS_LOST;
}

int ThreadCount() {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++count;
  }
  return count;
}

TEST_F(ControlTest, LoseAndRestore) {
  UseControl();
  InitWith("dgx-a100.yaml");
  const nvmlDevice_t gpu1 = Device(1);
  Control("lose 1");
  ASSERT_TRUE(Eventually([&] { return Lost(gpu1); }));

  char text[96];
  nvmlDevice_t device = nullptr;
  nvmlGpuTopologyLevel_t level;
  unsigned count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetName)(gpu1, text, sizeof(text)),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(1, &device),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByPciBusId_v2)("0000:0F:00.0", &device),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(NVML(nvmlDeviceGetTopologyCommonAncestor)(Device(0), gpu1, &level),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 8u);
  EXPECT_FALSE(Lost(Device(0)));

  Control("restore 1");
  ASSERT_TRUE(Eventually([&] { return !Lost(gpu1); }));
  EXPECT_EQ(Device(1), gpu1);
  EXPECT_EQ(NVML(nvmlDeviceGetName)(gpu1, text, sizeof(text)), NVML_SUCCESS);
}

TEST_F(ControlTest, FailAndRecover) {
  UseControl();
  InitWith("pcie-t4.yaml");
  unsigned count = 0;
  Control("fail 9");
  ASSERT_TRUE(Eventually([&] {
    return NVML(nvmlDeviceGetCount_v2)(&count) == NVML_ERROR_DRIVER_NOT_LOADED;
  }));
  char text[96];
  EXPECT_EQ(NVML(nvmlSystemGetDriverVersion)(text, sizeof(text)),
            NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_STREQ(NVML(nvmlErrorString)(NVML_ERROR_DRIVER_NOT_LOADED),
               "Driver Not Loaded");
  Control("recover");
  ASSERT_TRUE(Eventually(
      [&] { return NVML(nvmlDeviceGetCount_v2)(&count) == NVML_SUCCESS; }));
  // The failed nvmlInit_v2 did not count: one shutdown ends the session.
  EXPECT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlShutdown)(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(ControlTest, FailEndsABlockedWait) {
  UseControl();
  InitWith("dgx-a100.yaml");
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&set), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0),
                                           nvmlEventTypeXidCriticalError, set),
            NVML_SUCCESS);
  auto waiter = std::async(std::launch::async, [set] {
    nvmlEventData_t data;
    return NVML(nvmlEventSetWait_v2)(set, &data, 5000);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Control("fail 999");
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(2)),
            std::future_status::ready);
  EXPECT_EQ(waiter.get(), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);  // never affected by fail
}

TEST_F(ControlTest, BadLinesAreReportedAndSkipped) {
  UseControl();
  InitWith("pcie-t4.yaml");
  const nvmlDevice_t gpu0 = Device(0);
  const nvmlDevice_t gpu1 = Device(1);
  ::testing::internal::CaptureStderr();
  Control("explode 1");
  Control("lose 2");
  Control("xid 0");
  Control("fail 0");
  Control("ecc 0 triple");
  Control("");
  Control("# a comment");
  Control("lose 1");
  const bool lost = Eventually([&] { return Lost(gpu1); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(lost);
  EXPECT_THAT(err, HasSubstr("fake NVML: control line 1: unknown command"));
  EXPECT_THAT(err, HasSubstr("fake NVML: control line 2: no GPU with index 2"));
  EXPECT_THAT(err, HasSubstr("fake NVML: control line 3: wrong number"));
  EXPECT_THAT(err, HasSubstr("fake NVML: control line 4: fail needs"));
  EXPECT_THAT(err, HasSubstr("fake NVML: control line 5: ecc error kind"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 5) << err;
  EXPECT_FALSE(Lost(gpu0));
}

TEST_F(ControlTest, LinesWrittenBeforeInitAreNotReplayed) {
  UseControl();
  WriteFile("control", "lose 0\n");
  InitWith("pcie-t4.yaml");
  const nvmlDevice_t gpu0 = Device(0);
  const nvmlDevice_t gpu1 = Device(1);
  ::testing::internal::CaptureStderr();
  Control("bogus");
  Control("lose 1");
  const bool lost = Eventually([&] { return Lost(gpu1); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(lost);
  EXPECT_FALSE(Lost(gpu0));
  EXPECT_THAT(err, HasSubstr("control line 2: unknown command"));
}

TEST_F(ControlTest, TruncatedFileIsReadFromTheStart) {
  UseControl();
  InitWith("pcie-t4.yaml");
  const nvmlDevice_t gpu0 = Device(0);
  const nvmlDevice_t gpu1 = Device(1);
  Control("xid 0 13");
  Control("xid 0 13");
  Control("lose 0");
  ASSERT_TRUE(Eventually([&] { return Lost(gpu0); }));
  WriteFile("control", "lose 1\n");
  EXPECT_TRUE(Eventually([&] { return Lost(gpu1); }));
}

TEST_F(ControlTest, WatcherThreadLivesFromFirstInitToLastShutdown) {
  const int before = ThreadCount();
  UseMachine(ShippedMachine("pcie-t4.yaml"));
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  EXPECT_EQ(ThreadCount(), before) << "no FAKE_NVML_CONTROL, no thread";
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);

  UseControl();
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  EXPECT_EQ(ThreadCount(), before + 1);
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(ThreadCount(), before + 1);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(100));
  EXPECT_EQ(ThreadCount(), before);
}

TEST_F(ControlTest, ShutdownInForkedChildLeavesTheParentWatching) {
  UseControl();
  InitWith("pcie-t4.yaml");
  const nvmlDevice_t gpu1 = Device(1);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(NVML(nvmlShutdown)() == NVML_SUCCESS ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  Control("lose 1");
  EXPECT_TRUE(Eventually([&] { return Lost(gpu1); }));
}

TEST_F(ControlTest, UnwatchableDirectoryFailsInit) {
  setenv("FAKE_NVML_CONTROL", (dir_ + "/no/such/dir/control").c_str(), 1);
  UseMachine(ShippedMachine("pcie-t4.yaml"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("fake NVML: cannot watch"));
  unsigned count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_ERROR_UNINITIALIZED);
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
