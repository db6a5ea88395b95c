// The monitor as the daemon runs it: real clock, NVML call deadlines (work
// on the runner's worker), quiet rounds on. An idle monitor keeps sweeping
// on the worker without its own thread taking part; whatever a sweep or a
// wait finds, and Watch and Stop, still reach it at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "health/monitor.h"
#include "health/monitor_jobs.h"
#include "health/monitor_testing.h"
#include "testing/fake_nvml_root.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kSweep = absl::Milliseconds(40);

class MonitorQuietTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (monitor_ != nullptr) {
      monitor_->Stop();
      if (runner_.joinable()) runner_.join();
    }
    monitor_.reset();
    tracker_.reset();
    nvml_.reset();
  }

  // Opens NVML on shipped machine `name`, watches GPUs `gpus` (all if
  // empty) and runs the monitor on its own thread.
  void Start(const std::string& name, std::vector<unsigned> gpus = {},
             bool quiet = true) {
    fake_.UseMachine(std::string(GDP_MACHINES_DIR) + "/" + name + ".yaml");
    auto nvml = Nvml::Open(fake_.root());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
    nvml_->set_call_deadline(absl::Seconds(10));
    for (unsigned i = 0; i < *nvml_->DeviceCount(); ++i) {
      refs_.push_back({*nvml_->Uuid(*nvml_->DeviceByIndex(i)), i});
    }
    std::vector<WatchedGpu> watched;
    for (unsigned i = 0; i < refs_.size(); ++i) {
      if (gpus.empty() || std::count(gpus.begin(), gpus.end(), i) > 0) {
        watched.push_back(Watched(i));
      }
    }
    tracker_ = std::make_unique<HealthTracker>(XidPolicy());
    HealthMonitorOptions m;
    m.sweep_interval = kSweep;
    m.retry_interval = kSweep;
    m.signals_interval = 3 * kSweep;
    m.quiet_rounds = quiet;
    // The real clock, counting the monitor's thread's rounds.
    m.clock = [this] {
      ++clock_reads_;
      return absl::Now();
    };
    monitor_ = std::make_unique<HealthMonitor>(*nvml_, *tracker_,
                                               std::move(watched), m);
    runner_ = std::thread([this] { monitor_->Run(); });
  }

  // GPU `index` and its MIG devices, as discovery finds them.
  WatchedGpu Watched(unsigned index) const {
    return WatchedAsDiscovered(*nvml_, refs_[index]);
  }

  void Inject(const std::string& line) { fake_.Inject(line); }

  // Polls `done` for at most 3 s.
  static bool WaitFor(const std::function<bool()>& done) {
    const absl::Time limit = absl::Now() + absl::Seconds(3);
    while (absl::Now() < limit) {
      if (done()) return true;
      absl::SleepFor(absl::Milliseconds(1));
    }
    return done();
  }

  // How often the monitor's thread read its clock during `d`.
  int ClockReadsDuring(absl::Duration d) {
    const int before = clock_reads_.load();
    absl::SleepFor(d);
    return clock_reads_.load() - before;
  }
  // Whether, within 3 s, the monitor's thread stays out of five sweep
  // intervals in a row (the first rounds set up, register the GPUs and
  // read their signals).
  bool BecomesQuiet() {
    const absl::Time limit = absl::Now() + absl::Seconds(3);
    while (absl::Now() < limit) {
      if (ClockReadsDuring(5 * kSweep) == 0) return true;
    }
    return false;
  }

  Device Gpu(unsigned index) const { return GpuDevice(refs_[index]); }
  Device Mig(unsigned index, int gi, int ci) const {
    return MigDevice(refs_[index], gi, ci);
  }
  bool Healthy(const Device& d) const {
    return tracker_->HealthOf(d).health == Health::kHealthy;
  }

  testing::FakeNvmlRoot fake_{"quiet", GDP_FAKE_NVML_LIB};
  std::atomic<int> clock_reads_{0};
  std::unique_ptr<Nvml> nvml_;
  std::vector<GpuRef> refs_;
  std::unique_ptr<HealthTracker> tracker_;
  std::unique_ptr<HealthMonitor> monitor_;
  std::thread runner_;
};

TEST_F(MonitorQuietTest, AnIdleMonitorSweepsWithoutItsThread) {
  Start("dgx-a100");
  ASSERT_TRUE(BecomesQuiet());
  // Then 25 sweep intervals (eight signal reads) pass on the worker alone.
  EXPECT_EQ(ClockReadsDuring(25 * kSweep), 0);
}

TEST_F(MonitorQuietTest, WithoutQuietRoundsEverySweepWakesTheMonitor) {
  Start("dgx-a100", {}, /*quiet=*/false);
  absl::SleepFor(8 * kSweep);
  EXPECT_GE(ClockReadsDuring(25 * kSweep), 10);
}

TEST_F(MonitorQuietTest, AnXidEndsTheQuietRoundsAtOnce) {
  Start("dgx-a100");
  ASSERT_TRUE(BecomesQuiet());
  const absl::Time start = absl::Now();
  Inject("xid 4 46");
  ASSERT_TRUE(WaitFor([&] { return !Healthy(Gpu(4)); }));
  // Well before a sweep would have been due to find it.
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
  EXPECT_THAT(tracker_->HealthOf(Gpu(4)).reason, HasSubstr("XID 46"));
  EXPECT_TRUE(Healthy(Gpu(3)));
}

TEST_F(MonitorQuietTest, AQuietSweepThatFindsAFailingMigDeviceReturns) {
  Start("h100-mig");
  ASSERT_TRUE(BecomesQuiet());
  // GPU 0's MIG device of index 2 (GPU instance 9) fails; no event says so.
  Inject("fail-mig 0 2 999");
  ASSERT_TRUE(WaitFor([&] { return !Healthy(Mig(0, 9, 0)); }));
  EXPECT_TRUE(Healthy(Mig(0, 2, 0)));
}

TEST_F(MonitorQuietTest, AChangedSignalReturns) {
  Start("dgx-a100");
  ASSERT_TRUE(BecomesQuiet());
  Inject("remap-pending 5");
  ASSERT_TRUE(WaitFor([&] { return !Healthy(Gpu(5)); }));
  EXPECT_THAT(tracker_->HealthOf(Gpu(5)).reason,
              HasSubstr("row remapping pending"));
  // The monitor goes quiet again with the new signals as its reference.
  EXPECT_TRUE(BecomesQuiet());
}

TEST_F(MonitorQuietTest, ALostGpuIsFoundAndTheOthersStayWatched) {
  Start("dgx-a100");
  ASSERT_TRUE(BecomesQuiet());
  Inject("lose 2");
  ASSERT_TRUE(WaitFor([&] { return !Healthy(Gpu(2)); }));
  // The event set is then made anew without GPU 2 (an XID in between
  // reaches only the old set, as NVML queues events per set).
  absl::SleepFor(5 * kSweep);
  Inject("xid 6 46");
  ASSERT_TRUE(WaitFor([&] { return !Healthy(Gpu(6)); }));
  EXPECT_TRUE(Healthy(Gpu(1)));
}

TEST_F(MonitorQuietTest, WatchEndsTheQuietRounds) {
  Start("pcie-t4", {0});
  ASSERT_TRUE(BecomesQuiet());
  monitor_->Watch({Watched(1)});
  // Registered within a round or two: its XID is then seen.
  absl::SleepFor(4 * kSweep);
  Inject("xid 1 46");
  EXPECT_TRUE(WaitFor([&] { return !Healthy(Gpu(1)); }));
}

TEST_F(MonitorQuietTest, StopEndsRunAtOnce) {
  Start("dgx-a100");
  ASSERT_TRUE(BecomesQuiet());
  const absl::Time stop = absl::Now();
  monitor_->Stop();
  EXPECT_TRUE(monitor_->RunEnded(absl::Seconds(1)));
  EXPECT_LT(absl::Now() - stop, absl::Milliseconds(100));
  runner_.join();
}

TEST(QuietSweepTest, Table) {
  GpuSignals plain;
  plain.throttle_reasons = nvmlClocksThrottleReasonGpuIdle;
  GpuSignals idle_changed = plain;
  idle_changed.throttle_reasons = 0;  // not a slowdown reason: the same
  GpuSignals slowed = plain;
  slowed.throttle_reasons = nvmlClocksThrottleReasonHwSlowdown;
  GpuSignals link = plain;
  link.pcie = NvmlPcieLink{3, 4, 16, 16};
  auto answer = [](ProbeResult gpu, std::vector<ProbeResult> migs = {},
                   std::optional<GpuSignals> signals = std::nullopt) {
    SweepAnswer a;
    a.gpu.result = gpu;
    for (ProbeResult r : migs) {
      ProbeOutcome out;
      out.result = r;
      a.migs.push_back(out);
    }
    a.signals = std::move(signals);
    return a;
  };
  const std::vector<std::optional<GpuSignals>> last = {plain};
  const struct {
    const char* name;
    SweepAnswer answer;
    bool quiet;
  } kCases[] = {
      {"answers", answer(ProbeResult::kPass), true},
      {"lost", answer(ProbeResult::kLost), false},
      {"fails", answer(ProbeResult::kFail), false},
      {"MIG fails", answer(ProbeResult::kPass, {ProbeResult::kFail}), false},
      {"MIG gone", answer(ProbeResult::kPass, {ProbeResult::kGone}), false},
      {"same signals", answer(ProbeResult::kPass, {}, plain), true},
      {"idle bit only", answer(ProbeResult::kPass, {}, idle_changed), true},
      {"slowdown", answer(ProbeResult::kPass, {}, slowed), false},
      {"PCIe link", answer(ProbeResult::kPass, {}, link), false},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(QuietSweep({c.answer}, last), c.quiet) << c.name;
  }
  // Signals with nothing to compare with are news.
  EXPECT_FALSE(QuietSweep({answer(ProbeResult::kPass, {}, plain)}, {}));
  EXPECT_FALSE(
      QuietSweep({answer(ProbeResult::kPass, {}, plain)}, {std::nullopt}));
}

// A GPU that needs a reset has its reset markers read in every sweep: the
// same read as the one acted on is quiet, another (or a first) is news.
TEST(QuietSweepTest, ResetMarkers) {
  const NvmlResetMarkers asks{NVML_GPU_RECOVERY_ACTION_GPU_RESET, 0, 1};
  SweepAnswer read;
  read.reset_markers = asks;
  EXPECT_TRUE(QuietSweep({read}, {std::nullopt}, {asks}));
  EXPECT_FALSE(QuietSweep({read}, {std::nullopt}, {std::nullopt}));
  EXPECT_FALSE(QuietSweep({read}, {std::nullopt}, {}));
  EXPECT_FALSE(QuietSweep({read}, {std::nullopt},
                          {NvmlResetMarkers{asks.recovery_action, 0, 2}}));
  read.reset_markers.reset();  // not read (or the read failed)
  EXPECT_TRUE(QuietSweep({read}, {std::nullopt}, {asks}));
}

}  // namespace
}  // namespace gdp
