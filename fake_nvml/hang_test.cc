// Hang faults: "hang <gpu>" and "hang-all" block calls, with the library
// lock released, until "recover" or the last nvmlShutdown.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "fake_nvml/test_client.h"

namespace gdp::fake_nvml::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using ::testing::HasSubstr;

// How long a blocked call must stay blocked, and how long a released call
// (or a control line) may take.
constexpr milliseconds kStillBlocked(200);
constexpr std::chrono::seconds kPromptly(10);

// What a call answered: nvmlErrorString of its code, and on success what
// it wrote, as `value` (called only then) describes it.
std::string Answer(
    nvmlReturn_t result,
    const std::function<std::string()>& value = [] { return ""; }) {
  if (result != NVML_SUCCESS) return NVML(nvmlErrorString)(result);
  const std::string written = value();
  return written.empty() ? "Success" : "Success: " + written;
}

std::string HandleText(nvmlDevice_t handle) {
  return std::to_string(reinterpret_cast<uintptr_t>(handle));
}

// A call running on a thread of its own, and its answer.
using Call = std::shared_future<std::string>;

class HangTest : public FakeNvmlTest {
 protected:
  // Runs `call` on a thread of its own. The fixture keeps the call, so a
  // failed assertion never blocks in a future's destructor: TearDown's last
  // shutdown releases whatever is still blocked, and the fixture joins it
  // when it is destroyed.
  Call Start(std::function<std::string()> call) {
    calls_.push_back(std::async(std::launch::async, std::move(call)).share());
    return calls_.back();
  }

  // Appends `line`, then a line the library rejects, and waits for the
  // rejection on stderr: control lines apply in order, so `line` has been
  // applied. Needs no NVML call, so it works under "hang-all" too.
  void ControlAndWait(const std::string& line) {
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    const int saved = dup(STDERR_FILENO);
    ASSERT_GE(saved, 0);
    dup2(fds[1], STDERR_FILENO);
    Control(line);
    Control("applied");
    const std::string mark = "unknown command \"applied\"";
    std::string seen;
    const auto deadline = steady_clock::now() + kPromptly;
    while (seen.find(mark) == std::string::npos) {
      const auto left = std::chrono::duration_cast<milliseconds>(
          deadline - steady_clock::now());
      if (left <= milliseconds(0)) break;
      pollfd ready = {fds[0], POLLIN, 0};
      if (poll(&ready, 1, static_cast<int>(left.count())) <= 0) continue;
      char buffer[512];
      const ssize_t n = read(fds[0], buffer, sizeof(buffer));
      if (n > 0) seen.append(buffer, static_cast<size_t>(n));
    }
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fds[0]);
    close(fds[1]);
    ASSERT_THAT(seen, HasSubstr(mark)) << "after control line " << line;
  }

  std::vector<Call> calls_;
};

bool Ready(const Call& call, milliseconds within) {
  return call.wait_for(within) == std::future_status::ready;
}

TEST_F(HangTest, BadHangLinesAreReportedAndSkipped) {
  const struct {
    const char* line;
    const char* report;
  } kCases[] = {
      {"hang", "wrong number of arguments to hang;"},
      {"hang 0 1", "wrong number of arguments to hang;"},
      {"hang one", "bad GPU index \"one\""},
      {"hang -1", "bad GPU index \"-1\""},
      {"hang 2", "no GPU with index 2 (the machine has 2)"},
      {"hang-all 0", "wrong number of arguments to hang-all;"},
  };
  UseControl();
  InitWith("pcie-t4.yaml");
  const nvmlDevice_t gpu0 = Device(0);
  const nvmlDevice_t gpu1 = Device(1);
  ::testing::internal::CaptureStderr();
  for (const auto& c : kCases) Control(c.line);
  Control("lose 1");
  const bool lost = Eventually(
      [&] {
        unsigned minor = 0;
        return NVML(nvmlDeviceGetMinorNumber)(gpu1, &minor) ==
               NVML_ERROR_GPU_IS_LOST;
      },
      kPromptly);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(lost);
  for (size_t i = 0; i < std::size(kCases); ++i) {
    EXPECT_THAT(err, HasSubstr("fake NVML: control line " +
                               std::to_string(i + 1) + ": " + kCases[i].report))
        << kCases[i].line;
  }
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'),
            static_cast<long>(std::size(kCases)))
      << err;
  // Nothing hangs.
  const Call count = Start([] {
    unsigned n = 0;
    return Answer(NVML(nvmlDeviceGetCount_v2)(&n),
                  [&] { return std::to_string(n); });
  });
  const Call minor = Start([gpu0] {
    unsigned n = 0;
    return Answer(NVML(nvmlDeviceGetMinorNumber)(gpu0, &n),
                  [&] { return std::to_string(n); });
  });
  ASSERT_TRUE(Ready(count, kPromptly));
  ASSERT_TRUE(Ready(minor, kPromptly));
  EXPECT_EQ(count.get(), "Success: 2");
  EXPECT_EQ(minor.get(), "Success: 0");
}

// h100-mig.yaml: GPU 0 has MIG enabled (MIG device 0 is 3g.40gb, GPU
// instance 2, compute instance 0), GPU 1 not. "hang 0" blocks every call
// taking a handle of GPU 0, its MIG devices or its instances, and nothing
// else; "recover" releases them with the answers they had before the hang.
TEST_F(HangTest, HangBlocksCallsTakingHandlesOfTheGpu) {
  UseControl();
  InitWith("h100-mig.yaml");
  const nvmlDevice_t gpu0 = Device(0);
  const nvmlDevice_t gpu1 = Device(1);
  nvmlDevice_t mig = nullptr;
  ASSERT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(gpu0, 0, &mig),
            NVML_SUCCESS);
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(gpu0, 2, &gi), NVML_SUCCESS);
  nvmlComputeInstance_t ci = nullptr;
  ASSERT_EQ(NVML(nvmlGpuInstanceGetComputeInstanceById)(gi, 0, &ci),
            NVML_SUCCESS);
  const auto name = [](nvmlDevice_t device) {
    return [device] {
      char text[96] = "";
      return Answer(NVML(nvmlDeviceGetName)(device, text, sizeof(text)),
                    [&] { return std::string(text); });
    };
  };
  const struct {
    const char* what;
    std::function<std::string()> call;
    bool blocks;
  } kCases[] = {
      {"name of GPU 0", name(gpu0), true},
      {"name of its MIG device", name(mig), true},
      {"GPU-only call on its MIG device",
       [mig] {
         unsigned minor = 0;
         return Answer(NVML(nvmlDeviceGetMinorNumber)(mig, &minor));
       },
       true},
      {"its GPU instance",
       [gi] {
         nvmlGpuInstanceInfo_t info = {};
         return Answer(NVML(nvmlGpuInstanceGetInfo)(gi, &info),
                       [&] { return std::to_string(info.id); });
       },
       true},
      {"its compute instance",
       [ci] {
         nvmlComputeInstanceInfo_t info = {};
         return Answer(NVML(nvmlComputeInstanceGetInfo_v2)(ci, &info),
                       [&] { return std::to_string(info.id); });
       },
       true},
      {"topology with GPU 0 second",
       [gpu0, gpu1] {
         nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_INTERNAL;
         return Answer(
             NVML(nvmlDeviceGetTopologyCommonAncestor)(gpu1, gpu0, &level),
             [&] { return std::to_string(level); });
       },
       true},
      {"name of GPU 1", name(gpu1), false},
      {"GPU 0 by index",
       [] {
         nvmlDevice_t device = nullptr;
         return Answer(NVML(nvmlDeviceGetHandleByIndex_v2)(0, &device),
                       [&] { return HandleText(device); });
       },
       false},
      {"device count",
       [] {
         unsigned n = 0;
         return Answer(NVML(nvmlDeviceGetCount_v2)(&n),
                       [&] { return std::to_string(n); });
       },
       false},
  };
  std::vector<std::string> before;
  for (const auto& c : kCases) before.push_back(c.call());
  EXPECT_EQ(before[0], "Success: NVIDIA H100 80GB HBM3");
  EXPECT_EQ(before[1], "Success: NVIDIA H100 80GB HBM3 MIG 3g.40gb");
  EXPECT_EQ(before[2], "Not Supported");

  ASSERT_NO_FATAL_FAILURE(ControlAndWait("hang 0"));
  std::vector<Call> calls;
  for (const auto& c : kCases) calls.push_back(Start(c.call));
  for (size_t i = 0; i < std::size(kCases); ++i) {
    if (kCases[i].blocks) continue;
    ASSERT_TRUE(Ready(calls[i], kPromptly)) << kCases[i].what;
    EXPECT_EQ(calls[i].get(), before[i]) << kCases[i].what;
  }
  std::this_thread::sleep_for(kStillBlocked);
  for (size_t i = 0; i < std::size(kCases); ++i) {
    if (!kCases[i].blocks) continue;
    EXPECT_FALSE(Ready(calls[i], milliseconds(0))) << kCases[i].what;
  }
  Control("recover");
  for (size_t i = 0; i < std::size(kCases); ++i) {
    ASSERT_TRUE(Ready(calls[i], kPromptly)) << kCases[i].what;
    EXPECT_EQ(calls[i].get(), before[i]) << kCases[i].what;
  }
}

// "hang-all" blocks every call except init, shutdown and nvmlErrorString,
// event waits started after it included, while control lines still apply.
TEST_F(HangTest, HangAllBlocksEveryCallButInitShutdownAndErrorString) {
  UseControl();
  InitWith("dgx-a100.yaml");
  const nvmlDevice_t gpu1 = Device(1);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&set), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(Device(0),
                                           nvmlEventTypeXidCriticalError, set),
            NVML_SUCCESS);
  const struct {
    const char* what;
    std::function<std::string()> call;
  } kCases[] = {
      {"nvmlDeviceGetCount_v2",
       [] {
         unsigned n = 0;
         return Answer(NVML(nvmlDeviceGetCount_v2)(&n),
                       [&] { return std::to_string(n); });
       }},
      {"nvmlDeviceGetHandleByIndex_v2",
       [] {
         nvmlDevice_t device = nullptr;
         return Answer(NVML(nvmlDeviceGetHandleByIndex_v2)(1, &device),
                       [&] { return HandleText(device); });
       }},
      {"nvmlDeviceGetHandleByUUID",
       [] {
         nvmlDevice_t device = nullptr;
         return Answer(NVML(nvmlDeviceGetHandleByUUID)(
                           "GPU-5adbb474-7bdf-ddf2-58f1-9f042b0ab9c9", &device),
                       [&] { return HandleText(device); });
       }},
      {"nvmlDeviceGetHandleByPciBusId_v2",
       [] {
         nvmlDevice_t device = nullptr;
         return Answer(
             NVML(nvmlDeviceGetHandleByPciBusId_v2)("0000:0F:00.0", &device),
             [&] { return HandleText(device); });
       }},
      {"nvmlDeviceGetName",
       [gpu1] {
         char text[96] = "";
         return Answer(NVML(nvmlDeviceGetName)(gpu1, text, sizeof(text)),
                       [&] { return std::string(text); });
       }},
      {"nvmlSystemGetDriverVersion",
       [] {
         char text[96] = "";
         return Answer(NVML(nvmlSystemGetDriverVersion)(text, sizeof(text)),
                       [&] { return std::string(text); });
       }},
      {"nvmlEventSetWait_v2",
       [set] {
         nvmlEventData_t data;
         return Answer(NVML(nvmlEventSetWait_v2)(set, &data, 0));
       }},
      {"nvmlEventSetCreate and Free",
       [] {
         nvmlEventSet_t other = nullptr;
         const nvmlReturn_t created = NVML(nvmlEventSetCreate)(&other);
         if (created != NVML_SUCCESS) return Answer(created);
         return Answer(NVML(nvmlEventSetFree)(other));
       }},
  };
  std::vector<std::string> before;
  for (const auto& c : kCases) before.push_back(c.call());
  EXPECT_EQ(before[0], "Success: 8");
  EXPECT_EQ(before[6], "Timeout");

  ASSERT_NO_FATAL_FAILURE(ControlAndWait("hang-all"));
  std::vector<Call> calls;
  for (const auto& c : kCases) calls.push_back(Start(c.call));
  // Init, shutdown and nvmlErrorString still answer (the count goes 2, 1).
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_STREQ(NVML(nvmlErrorString)(NVML_ERROR_TIMEOUT), "Timeout");
  std::this_thread::sleep_for(kStillBlocked);
  for (size_t i = 0; i < std::size(kCases); ++i) {
    EXPECT_FALSE(Ready(calls[i], milliseconds(0))) << kCases[i].what;
  }
  Control("recover");
  for (size_t i = 0; i < std::size(kCases); ++i) {
    ASSERT_TRUE(Ready(calls[i], kPromptly)) << kCases[i].what;
    EXPECT_EQ(calls[i].get(), before[i]) << kCases[i].what;
  }
}

// A hang comes before the other faults; released, the call answers them.
TEST_F(HangTest, HangComesBeforeOtherFaults) {
  UseControl();
  InitWith("pcie-t4.yaml");
  const nvmlDevice_t gpu1 = Device(1);
  ASSERT_NO_FATAL_FAILURE(ControlAndWait("lose 1"));
  ASSERT_NO_FATAL_FAILURE(ControlAndWait("hang 1"));
  const Call call = Start([gpu1] {
    unsigned minor = 0;
    return Answer(NVML(nvmlDeviceGetMinorNumber)(gpu1, &minor));
  });
  EXPECT_FALSE(Ready(call, kStillBlocked));
  Control("recover");  // ends the hang, not the loss
  ASSERT_TRUE(Ready(call, kPromptly));
  EXPECT_EQ(call.get(), "GPU is lost");
}

// The last nvmlShutdown releases blocked calls with UNINITIALIZED; one that
// leaves the library initialized does not.
TEST_F(HangTest, LastShutdownReleasesBlockedCalls) {
  const struct {
    const char* line;
    std::function<std::string(nvmlDevice_t gpu1)> call;
  } kCases[] = {
      {"hang 1",
       [](nvmlDevice_t gpu1) {
         char text[96] = "";
         return Answer(NVML(nvmlDeviceGetName)(gpu1, text, sizeof(text)),
                       [&] { return std::string(text); });
       }},
      {"hang-all",
       [](nvmlDevice_t) {
         unsigned n = 0;
         return Answer(NVML(nvmlDeviceGetCount_v2)(&n),
                       [&] { return std::to_string(n); });
       }},
  };
  UseControl();
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.line);
    InitWith("pcie-t4.yaml");
    ASSERT_EQ(NVML(nvmlInit_v2)(), NVML_SUCCESS);  // count 2
    const nvmlDevice_t gpu1 = Device(1);
    ASSERT_NO_FATAL_FAILURE(ControlAndWait(c.line));
    const Call call = Start([call = c.call, gpu1] { return call(gpu1); });
    std::this_thread::sleep_for(kStillBlocked);
    EXPECT_FALSE(Ready(call, milliseconds(0)));
    ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);  // count 1
    EXPECT_FALSE(Ready(call, kStillBlocked));
    ASSERT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);  // the last
    ASSERT_TRUE(Ready(call, kPromptly));
    EXPECT_EQ(call.get(), "Uninitialized");
  }
}

}  // namespace
}  // namespace gdp::fake_nvml::testing
