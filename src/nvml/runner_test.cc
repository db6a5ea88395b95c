// NVML call deadlines: NvmlRunner and the hung-call gate, against the fake
// NVML's hang faults (a call blocks until `recover`).
#include "nvml/runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/synchronization/notification.h"
#include "nvml/deadline.h"
#include "testing/temp_dir.h"
#include "util/keep_until_exit.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr absl::Duration kDeadline = absl::Milliseconds(300);

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "usr/lib64");
    fs::create_symlink(GDP_FAKE_NVML_LIB,
                       root_ / "usr/lib64/libnvidia-ml.so.1");
    control_ = root_ / "control";
    setenv("FAKE_NVML_CONTROL", control_.c_str(), 1);
    setenv("FAKE_NVML_MACHINE",
           (std::string(GDP_MACHINES_DIR) + "/dgx-a100.yaml").c_str(), 1);
    auto nvml = Nvml::Open(root_.string());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
    nvml_->set_call_deadline(kDeadline);
    for (unsigned i = 0; i < 2; ++i) {
      auto d = nvml_->DeviceByIndex(i);
      ASSERT_TRUE(d.ok()) << d.status();
      gpus_[i] = *d;
      ASSERT_TRUE(nvml_->Uuid(*d).ok());  // names the handle for messages
    }
  }
  void TearDown() override {
    // Whatever still hangs is released, so the Nvml can shut down.
    Inject("recover");
    runner_.reset();
    EXPECT_TRUE(WaitUntil([&] { return nvml_->Hangs().empty(); }));
    nvml_.reset();
    unsetenv("FAKE_NVML_CONTROL");
  }
  void Inject(const std::string& line) {
    std::ofstream(control_, std::ios::app) << line << "\n";
  }
  // The fake applies control lines asynchronously: waits up to 20 s for
  // `ready`.
  template <typename F>
  static bool WaitUntil(F ready) {
    const absl::Time end = absl::Now() + absl::Seconds(20);
    while (absl::Now() < end) {
      if (ready()) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return ready();
  }
  NvmlRunner& runner() {
    if (runner_ == nullptr) runner_ = std::make_unique<NvmlRunner>(*nvml_);
    return *runner_;
  }
  absl::StatusOr<unsigned long long> Memory(unsigned gpu) {
    absl::StatusOr<absl::StatusOr<unsigned long long>> r =
        runner().Call<absl::StatusOr<unsigned long long>>(
            [nvml = nvml_.get(), d = gpus_[gpu]] {
              return nvml->MemoryTotal(d);
            });
    if (!r.ok()) return r.status();
    return *r;
  }

  const gdp::testing::TempDir tmp_{"runner"};
  const fs::path root_ = tmp_.path();
  fs::path control_;
  std::unique_ptr<Nvml> nvml_;
  std::unique_ptr<NvmlRunner> runner_;
  nvmlDevice_t gpus_[2] = {};
};

TEST_F(RunnerTest, CallsWithoutHangAnswerAsUsual) {
  absl::StatusOr<unsigned long long> m = Memory(0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_GT(*m, 0u);
  EXPECT_TRUE(nvml_->Hangs().empty());
}

TEST_F(RunnerTest, HungGpuFailsAfterTheDeadlineThenAtOnceUntilItReturns) {
  Inject("hang 1");
  absl::StatusOr<unsigned long long> m;
  // The fake takes the line within a moment; until then calls answer.
  ASSERT_TRUE(WaitUntil([&] {
    m = Memory(1);
    return !m.ok();
  }));
  EXPECT_EQ(m.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(IsNvmlHang(m.status()));
  EXPECT_FALSE(IsNvmlHangOfAll(m.status()));
  EXPECT_THAT(
      m.status().message(),
      HasSubstr("NVML nvmlDeviceGetMemoryInfo did not return in 300ms"));
  ASSERT_EQ(nvml_->Hangs().size(), 1u);
  EXPECT_THAT(nvml_->Hangs()[0].subject, HasSubstr("GPU-"));
  EXPECT_TRUE(nvml_->Hangs()[0].per_gpu);

  // Now at once, even outside a runner, and the other GPU still answers.
  const absl::Time before = absl::Now();
  absl::StatusOr<unsigned long long> again = nvml_->MemoryTotal(gpus_[1]);
  EXPECT_TRUE(IsNvmlHang(again.status())) << again.status();
  EXPECT_LT(absl::Now() - before, kDeadline);
  EXPECT_TRUE(Memory(0).ok());
  EXPECT_TRUE(nvml_->DeviceCount().ok());
  // Looking the hung GPU up by UUID or index is a call about it too.
  EXPECT_TRUE(
      IsNvmlHang(nvml_->DeviceByUuid(nvml_->Hangs()[0].subject).status()));
  EXPECT_TRUE(IsNvmlHang(nvml_->DeviceByIndex(1).status()));
  EXPECT_TRUE(nvml_->DeviceByIndex(0).ok());

  // The hung call returns once the fault ends, and the GPU answers again.
  Inject("recover");
  ASSERT_TRUE(WaitUntil([&] { return nvml_->Hangs().empty(); }));
  EXPECT_TRUE(Memory(1).ok());
}

TEST_F(RunnerTest, HangOfACallAboutNoGpuBlocksEveryCall) {
  Inject("hang-all");
  absl::StatusOr<absl::StatusOr<unsigned>> n;
  ASSERT_TRUE(WaitUntil([&] {
    n = runner().Call<absl::StatusOr<unsigned>>(
        [nvml = nvml_.get()] { return nvml->DeviceCount(); });
    return !n.ok();
  }));
  EXPECT_TRUE(IsNvmlHangOfAll(n.status())) << n.status();
  EXPECT_THAT(n.status().message(),
              HasSubstr("NVML nvmlDeviceGetCount_v2 did not return in"));
  // Every call fails at once now, whatever it is about.
  EXPECT_TRUE(IsNvmlHangOfAll(nvml_->MemoryTotal(gpus_[0]).status()));
  EXPECT_TRUE(IsNvmlHangOfAll(nvml_->DeviceByUuid("GPU-x").status()));
  Inject("recover");
  ASSERT_TRUE(WaitUntil([&] { return nvml_->Hangs().empty(); }));
  EXPECT_TRUE(nvml_->DeviceCount().ok());
}

TEST_F(RunnerTest, HungCallAboutTwoGpusDoesNotBlockEitherAlone) {
  Inject("hang 1");
  absl::StatusOr<absl::StatusOr<nvmlGpuTopologyLevel_t>> level;
  ASSERT_TRUE(WaitUntil([&] {
    level = runner().Call<absl::StatusOr<nvmlGpuTopologyLevel_t>>(
        [nvml = nvml_.get(), a = gpus_[0], b = gpus_[1]] {
          return nvml->CommonAncestor(a, b);
        });
    return !level.ok();
  }));
  EXPECT_TRUE(IsNvmlHang(level.status())) << level.status();
  // Which of the two is sick is not known: GPU 0 alone still answers, and
  // another call about both fails at once.
  EXPECT_TRUE(nvml_->MemoryTotal(gpus_[0]).ok());
  EXPECT_TRUE(IsNvmlHang(nvml_->CommonAncestor(gpus_[1], gpus_[0]).status()));
}

TEST_F(RunnerTest, LaterCallsOfAGivenUpJobAreNotMade) {
  Inject("hang 1");
  std::shared_ptr<absl::Status> second;
  std::shared_ptr<absl::Notification> ended;
  absl::Status s;
  ASSERT_TRUE(WaitUntil([&] {
    second = std::make_shared<absl::Status>();
    ended = std::make_shared<absl::Notification>();
    s = runner().Run([nvml = nvml_.get(), d = gpus_[1], d0 = gpus_[0],
                      second = second, ended = ended] {
      (void)nvml->MemoryTotal(d);  // hangs once the fault is in
      *second = nvml->MemoryTotal(d0).status();
      ended->Notify();
    });
    return !s.ok();
  }));
  EXPECT_TRUE(IsNvmlHang(s));
  Inject("recover");
  ASSERT_TRUE(ended->WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(second->code(), absl::StatusCode::kCancelled) << *second;
}

TEST_F(RunnerTest, CancelEndsAWaitAtOnceAndLaterRunsAreRefused) {
  // A job that takes long without hanging (an event wait of 5 s).
  auto set = nvml_->CreateEventSet();
  ASSERT_TRUE(set.ok()) << set.status();
  std::shared_ptr<NvmlEventSet> shared(*std::move(set));
  std::thread cancel([&] {
    absl::SleepFor(absl::Milliseconds(100));
    runner().Cancel();
  });
  const absl::Time before = absl::Now();
  absl::Status s =
      runner().Run([shared] { (void)shared->Wait(absl::Seconds(2)); });
  cancel.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_LT(absl::Now() - before, absl::Seconds(2));
  EXPECT_EQ(runner().Run([] {}).code(), absl::StatusCode::kCancelled);
  // The wait ends by itself; its worker then ends and the Nvml can go.
  EXPECT_TRUE(nvml_->gate().WaitForWorkers(absl::Seconds(20)));
}

TEST_F(RunnerTest, WithoutDeadlineJobsRunOnTheCallersThread) {
  nvml_->set_call_deadline(absl::ZeroDuration());
  const std::thread::id me = std::this_thread::get_id();
  std::thread::id ran;
  ASSERT_TRUE(runner().Run([&] { ran = std::this_thread::get_id(); }).ok());
  EXPECT_EQ(ran, me);
}

}  // namespace
}  // namespace gdp
