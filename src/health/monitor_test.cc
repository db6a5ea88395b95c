// The monitor against the project's fake libnvidia-ml.so.1 (through a
// driver root, as on a node), with faults injected through its control
// file. Sweeps and probes run on a fake clock the tests advance; NVML waits
// are real but short.
#include "health/monitor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "health/monitor_testing.h"
#include "testing/fake_nvml_root.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::HasSubstr;

class FakeClock {
 public:
  absl::Time Now() {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ = absl::FromUnixSeconds(1700000000);
};

class MonitorTest : public ::testing::Test {
 protected:
  void TearDown() override {
    monitor_.reset();
    tracker_.reset();
    nvml_.reset();
  }

  // Opens NVML on machine file `machine` and makes a tracker and a monitor
  // watching every GPU (or `gpus`).
  void Start(const std::string& machine, XidPolicy policy = XidPolicy(),
             std::vector<unsigned> gpus = {}) {
    fake_.UseMachine(machine);
    auto nvml = Nvml::Open(fake_.root());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
    const unsigned count = *nvml_->DeviceCount();
    for (unsigned i = 0; i < count; ++i) {
      refs_.push_back({*nvml_->Uuid(*nvml_->DeviceByIndex(i)), i});
    }
    std::vector<WatchedGpu> watched;
    for (unsigned i = 0; i < count; ++i) {
      if (gpus.empty() || std::count(gpus.begin(), gpus.end(), i) > 0) {
        watched.push_back(Watched(i));
      }
    }
    HealthTrackerOptions t;
    t.quiet_period = absl::Seconds(60);
    t.probe_interval = absl::Seconds(10);
    tracker_ = std::make_unique<HealthTracker>(std::move(policy), t);
    HealthMonitorOptions m;
    m.wait_slice = absl::Milliseconds(20);
    m.sweep_interval = absl::Seconds(5);
    m.retry_interval = retry_interval_;
    m.clock = [this] { return clock_.Now(); };
    monitor_ = std::make_unique<HealthMonitor>(*nvml_, *tracker_,
                                               std::move(watched), m);
    monitor_->Step(absl::ZeroDuration());  // event set made, GPUs registered
  }
  void StartShipped(const std::string& name, XidPolicy policy = XidPolicy(),
                    std::vector<unsigned> gpus = {}) {
    Start(std::string(GDP_MACHINES_DIR) + "/" + name + ".yaml",
          std::move(policy), std::move(gpus));
  }

  // GPU `index` and its MIG devices, as discovery finds them.
  WatchedGpu Watched(unsigned index) const {
    return WatchedAsDiscovered(*nvml_, refs_[index]);
  }
  std::vector<WatchedGpu> AllWatched() const {
    std::vector<WatchedGpu> all;
    for (unsigned i = 0; i < refs_.size(); ++i) all.push_back(Watched(i));
    return all;
  }

  void Inject(const std::string& line) { fake_.Inject(line); }

  // Steps (advancing the fake clock by `advance` before each step) until
  // `done`, for at most 2 s of real time.
  bool StepUntil(const std::function<bool()>& done,
                 absl::Duration advance = absl::ZeroDuration()) {
    const absl::Time limit = absl::Now() + absl::Seconds(2);
    while (absl::Now() < limit) {
      clock_.Advance(advance);
      monitor_->Step(absl::Milliseconds(50));
      if (done()) return true;
    }
    return false;
  }

  // Polls `done` for at most 2 s of real time.
  static bool WaitFor(const std::function<bool()>& done) {
    const absl::Time limit = absl::Now() + absl::Seconds(2);
    while (absl::Now() < limit) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return done();
  }

  Device Gpu(unsigned index, int replica = -1) const {
    return GpuDevice(refs_[index], replica);
  }
  Device Mig(unsigned index, int gi, int ci) const {
    return MigDevice(refs_[index], gi, ci);
  }
  bool Healthy(const Device& d) const {
    return tracker_->HealthOf(d).health == Health::kHealthy;
  }
  std::string Reason(const Device& d) const {
    return tracker_->HealthOf(d).reason;
  }

  testing::FakeNvmlRoot fake_{"health", GDP_FAKE_NVML_LIB};
  absl::Duration retry_interval_ = absl::Milliseconds(10);
  FakeClock clock_;
  std::unique_ptr<Nvml> nvml_;
  std::vector<GpuRef> refs_;
  std::unique_ptr<HealthTracker> tracker_;
  std::unique_ptr<HealthMonitor> monitor_;
};

TEST_F(MonitorTest, IgnoredXidLeavesTheGpuHealthy) {
  StartShipped("pcie-t4");
  Inject("xid 0 13");
  Inject("xid 0 31");
  Inject("ecc 0 single");
  Inject("xid 1 94");  // a marker: once it is seen, the others were too
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(1)); }));
  EXPECT_TRUE(Healthy(Gpu(0)));
  EXPECT_THAT(Reason(Gpu(1)), HasSubstr("XID 94"));
}

TEST_F(MonitorTest, RecoverableXidRecoversAfterTheQuietPeriod) {
  StartShipped("dgx-a100");
  Inject("xid 3 94");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(3)); }));
  EXPECT_FALSE(Healthy(Gpu(3, 1)));  // replicas share it
  EXPECT_TRUE(Healthy(Gpu(2)));
  clock_.Advance(absl::Seconds(59));
  monitor_->Step(absl::Milliseconds(10));
  EXPECT_FALSE(Healthy(Gpu(3)));
  clock_.Advance(absl::Seconds(1));
  monitor_->Step(absl::Milliseconds(10));  // the probe is due and passes
  EXPECT_TRUE(Healthy(Gpu(3)));
}

TEST_F(MonitorTest, NeedsResetXidWaitsForLostAndRestored) {
  StartShipped("dgx-a100");
  Inject("xid 0 46");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(0)); }));
  EXPECT_THAT(Reason(Gpu(0)), HasSubstr("unhealthy until the GPU is reset"));
  // Sweeps find it answering: no reset yet.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(absl::Minutes(10));
    monitor_->Step(absl::Milliseconds(5));
  }
  EXPECT_FALSE(Healthy(Gpu(0)));
  Inject("lose 0");
  ASSERT_TRUE(StepUntil(
      [&] { return Reason(Gpu(0)).find("GPU lost") != std::string::npos; },
      absl::Seconds(5)));
  // Whichever comes first says so: the XID 79 NVML queues as it falls off
  // the bus, or the wait's GPU_IS_LOST and the probe that follows.
  EXPECT_THAT(Reason(Gpu(0)), AnyOf(HasSubstr("it fell off the bus"),
                                    HasSubstr("GPU is lost")));
  EXPECT_TRUE(Healthy(Gpu(1)));
  Inject("restore 0");
  ASSERT_TRUE(StepUntil([&] { return Healthy(Gpu(0)); }, absl::Seconds(5)));
  // Its events are watched again.
  Inject("xid 0 94");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(0)); }));
}

TEST_F(MonitorTest, LostGpuIsFoundAtOnceAndTheOthersStayWatched) {
  // NVML queues XID 79, then the wait answers GPU_IS_LOST: the GPU is
  // probed lost at once, and the others are watched on a new event set
  // without waiting for the retry interval.
  retry_interval_ = absl::Seconds(30);
  StartShipped("pcie-t4");
  Inject("lose 1");
  ASSERT_TRUE(StepUntil(
      [&] { return Reason(Gpu(1)).find("GPU lost") != std::string::npos; }));
  EXPECT_TRUE(Healthy(Gpu(0)));
  // The next step makes the new set (events before that are not recorded,
  // as in NVML).
  monitor_->Step(absl::Milliseconds(5));
  Inject("xid 0 94");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(0)); }));
  Inject("restore 1");
  ASSERT_TRUE(StepUntil([&] { return Healthy(Gpu(1)); }, absl::Seconds(5)));
}

TEST_F(MonitorTest, DoubleBitEccNeedsAReset) {
  StartShipped("pcie-t4");
  Inject("ecc 1 double");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(1)); }));
  EXPECT_THAT(Reason(Gpu(1)), HasSubstr("double-bit ECC error (as XID 48"));
  clock_.Advance(absl::Hours(2));
  monitor_->Step(absl::Milliseconds(5));
  EXPECT_FALSE(Healthy(Gpu(1)));
}

TEST_F(MonitorTest, NvmlFailingMakesEverythingUnhealthyUntilItRecovers) {
  StartShipped("pcie-t4");
  Inject("xid 1 46");  // its own failure outlives NVML's
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(1)); }));
  Inject("fail 999");
  ASSERT_TRUE(StepUntil([&] { return tracker_->nvml_failed(); }));
  EXPECT_FALSE(Healthy(Gpu(0)));
  EXPECT_THAT(Reason(Gpu(0)), HasSubstr("NVML event wait failed: "));
  // Still failing: new event sets cannot be made.
  for (int i = 0; i < 5; ++i) monitor_->Step(absl::Milliseconds(20));
  EXPECT_TRUE(tracker_->nvml_failed());
  Inject("recover");
  ASSERT_TRUE(StepUntil([&] { return !tracker_->nvml_failed(); }));
  EXPECT_TRUE(Healthy(Gpu(0)));
  EXPECT_EQ(Reason(Gpu(0)), "");
  EXPECT_FALSE(Healthy(Gpu(1)));
  // The new event set watches every GPU.
  Inject("xid 0 94");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(0)); }));
}

TEST_F(MonitorTest, SweepsFindAFailingMigDeviceWithoutAnEvent) {
  StartShipped("h100-mig");
  // GPU 0's MIG device of index 2 (GPU instance 9) fails every call.
  Inject("fail-mig 0 2 999");
  nvmlDevice_t gpu0 = *nvml_->DeviceByIndex(0);
  ASSERT_TRUE(WaitFor([&] {
    return !nvml_->MemoryTotal(*nvml_->MigDeviceByIndex(gpu0, 2)).ok();
  }));
  EXPECT_TRUE(Healthy(Mig(0, 9, 0)));
  clock_.Advance(absl::Seconds(5));  // a sweep is due
  monitor_->Step(absl::Milliseconds(5));
  EXPECT_FALSE(Healthy(Mig(0, 9, 0)));
  EXPECT_THAT(Reason(Mig(0, 9, 0)),
              HasSubstr("GPU instance 9 compute instance 0: MIG device does "
                        "not answer NVML"));
  EXPECT_EQ(tracker_->HealthOf(Mig(0, 9, 0)).cause.kind,
            HealthCause::Kind::kNvml);
  EXPECT_TRUE(Healthy(Mig(0, 2, 0)));
  EXPECT_TRUE(Healthy(Mig(0, 10, 0)));
  EXPECT_TRUE(Healthy(Gpu(1)));
  // Healthy again once it answers, after its quiet period.
  Inject("recover");
  ASSERT_TRUE(WaitFor([&] {
    return nvml_->MemoryTotal(*nvml_->MigDeviceByIndex(gpu0, 2)).ok();
  }));
  ASSERT_TRUE(
      StepUntil([&] { return Healthy(Mig(0, 9, 0)); }, absl::Seconds(10)));
}

TEST_F(MonitorTest, MigEventsAndProbes) {
  StartShipped("h100-mig");
  // GPU 0's MIG devices: GPU instances 2, 3, 9, 10 (index 2 is 9).
  Inject("xid 0 94 9 0");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Mig(0, 9, 0)); }));
  EXPECT_THAT(Reason(Mig(0, 9, 0)),
              HasSubstr("GPU instance 9 compute instance 0: XID 94"));
  EXPECT_TRUE(Healthy(Mig(0, 2, 0)));
  EXPECT_TRUE(Healthy(Mig(0, 10, 0)));
  EXPECT_TRUE(Healthy(Gpu(1)));
  // Its MIG device fails the probe after the quiet period...
  Inject("fail-mig 0 2 999");
  ASSERT_TRUE(WaitFor([&] {
    nvmlDevice_t mig = *nvml_->MigDeviceByIndex(*nvml_->DeviceByIndex(0), 2);
    return !nvml_->MemoryTotal(mig).ok();
  }));
  clock_.Advance(absl::Seconds(60));
  monitor_->Step(absl::Milliseconds(5));
  EXPECT_FALSE(Healthy(Mig(0, 9, 0)));
  EXPECT_THAT(Reason(Mig(0, 9, 0)), HasSubstr("last probe failed"));
  // ... and passes once it answers again.
  Inject("recover");
  ASSERT_TRUE(
      StepUntil([&] { return Healthy(Mig(0, 9, 0)); }, absl::Seconds(10)));
  // An event naming no instance takes every MIG device of the GPU.
  Inject("xid 0 94");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Mig(0, 2, 0)); }));
  EXPECT_FALSE(Healthy(Mig(0, 10, 0)));
  EXPECT_TRUE(Healthy(Gpu(1)));
}

TEST_F(MonitorTest, GpuWithoutEventsIsLoggedNotUnhealthy) {
  // pcie-t4 with GPU 0 reporting only XIDs and GPU 1 no events at all.
  std::ifstream in(std::string(GDP_MACHINES_DIR) + "/pcie-t4.yaml");
  std::string yaml((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  yaml = std::regex_replace(yaml, std::regex("(    host_bridge: 0\n)"),
                            "$1    supported_events: [xid]\n");
  yaml = std::regex_replace(yaml, std::regex("(    host_bridge: 1\n)"),
                            "$1    supported_events: []\n");
  const fs::path machine = fake_.dir() / "machine.yaml";
  std::ofstream(machine) << yaml;
  Start(machine.string());
  monitor_->Step(absl::Milliseconds(5));
  EXPECT_TRUE(Healthy(Gpu(0)));
  EXPECT_TRUE(Healthy(Gpu(1)));
  Inject("ecc 0 double");  // not registered: never delivered
  Inject("xid 1 79");      // likewise
  Inject("xid 0 94");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(0)); }));
  EXPECT_THAT(Reason(Gpu(0)), HasSubstr("XID 94"));
  EXPECT_TRUE(Healthy(Gpu(1)));
  // Probes still watch it.
  Inject("lose 1");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(1)); }, absl::Seconds(5)));
}

TEST_F(MonitorTest, WatchAddsGpus) {
  StartShipped("pcie-t4", XidPolicy(), {0});
  Inject("xid 1 94");  // GPU 1 is not watched yet
  Inject("xid 0 94");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(0)); }));
  EXPECT_TRUE(Healthy(Gpu(1)));
  monitor_->Watch({Watched(1)});
  monitor_->Step(absl::ZeroDuration());
  Inject("xid 1 46");
  ASSERT_TRUE(StepUntil([&] { return !Healthy(Gpu(1)); }));
  EXPECT_THAT(Reason(Gpu(1)), HasSubstr("XID 46"));
}

TEST_F(MonitorTest, WatchReachesARunningMonitorWhileNvmlIsIdle) {
  // Run's Step goes on while the waits time out: GPUs passed to Watch (a
  // reload or a rediscovery found them) must not wait for an event.
  StartShipped("pcie-t4", XidPolicy(), {0});
  std::thread runner([&] { monitor_->Run(); });
  absl::SleepFor(absl::Milliseconds(100));  // Run's Step has begun
  monitor_->Watch({Watched(1)});
  absl::SleepFor(absl::Milliseconds(100));  // a few idle rounds
  Inject("xid 1 46");
  EXPECT_TRUE(WaitFor([&] { return !Healthy(Gpu(1)); }));
  monitor_->Stop();
  runner.join();
}

TEST_F(MonitorTest, StopEndsRunPromptly) {
  StartShipped("pcie-t4");
  std::thread runner([&] { monitor_->Run(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Inject("xid 0 94");
  const absl::Time limit = absl::Now() + absl::Seconds(2);
  while (Healthy(Gpu(0)) && absl::Now() < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(Healthy(Gpu(0)));
  const absl::Time stop = absl::Now();
  monitor_->Stop();
  runner.join();
  EXPECT_LT(absl::Now() - stop, absl::Milliseconds(200));
  // Later steps return at once.
  const absl::Time step = absl::Now();
  monitor_->Step(absl::Seconds(5));
  EXPECT_LT(absl::Now() - step, absl::Milliseconds(50));
}

TEST_F(MonitorTest, AWaitEndingAfterStopTouchesNothingButTheMonitor) {
  StartShipped("pcie-t4");
  // The daemon's settings: no wait slice, real clock; an idle monitor waits
  // in NVML until the next sweep.
  HealthMonitorOptions o;
  o.sweep_interval = absl::Minutes(10);
  monitor_ =
      std::make_unique<HealthMonitor>(*nvml_, *tracker_, AllWatched(), o);
  monitor_->Step(absl::ZeroDuration());  // event set made, GPUs registered
  std::thread runner([&] { monitor_->Run(); });
  Inject("xid 0 94");
  ASSERT_TRUE(WaitFor([&] { return !Healthy(Gpu(0)); }));
  // The event was handled; let the monitor enter its next wait (until the
  // sweep, 10 minutes away) before stopping it: a Stop between two steps
  // would end Run at once.
  absl::SleepFor(absl::Milliseconds(300));
  monitor_->Stop();
  // Without NVML call deadlines (none set here) the wait runs on Run's
  // thread, and NVML cannot cut it short.
  EXPECT_FALSE(monitor_->RunEnded(absl::Milliseconds(100)));
  tracker_.reset();    // as a daemon tears down once Stop has returned
  Inject("xid 1 79");  // ends the wait; the freed tracker must not be used
  EXPECT_TRUE(monitor_->RunEnded(absl::Seconds(5)));
  runner.join();
}

TEST_F(MonitorTest, StopWakesAFailedNvmlSleep) {
  retry_interval_ = absl::Seconds(10);
  StartShipped("pcie-t4");
  Inject("fail 999");
  ASSERT_TRUE(StepUntil([&] { return tracker_->nvml_failed(); }));
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    monitor_->Stop();
  });
  const absl::Time start = absl::Now();
  monitor_->Step(absl::Seconds(5));  // sleeps towards the retry, until Stop
  stopper.join();
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
}

}  // namespace
}  // namespace gdp
