// The monitor's event set made anew (a GPU lost, NVML failing) against the
// fake libnvidia-ml.so.1: NVML queues events per set, so an event between
// the old set's last wait and the new set's registration reaches only the
// old set; none may be lost, and none counted twice (what reached both).
// Also TakeOver's matching of the two sets' events (NotTakenBefore).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "health/monitor.h"
#include "health/monitor_jobs.h"
#include "health/monitor_testing.h"
#include "metrics/exposition.h"
#include "metrics/registry.h"
#include "testing/fake_nvml_root.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

// The health events counted so far of `kind` and `xid` (process-wide).
double EventsCounted(const std::string& kind, const std::string& xid) {
  const std::string head = "gpu_device_plugin_health_events_total{kind=\"" +
                           kind + "\",xid=\"" + xid + "\"} ";
  const std::string text =
      metrics::RenderText(metrics::DefaultRegistry().Collect());
  const size_t at = text.find(head);
  if (at == std::string::npos) return 0;
  return std::strtod(text.c_str() + at + head.size(), nullptr);
}

class MonitorEventSetTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (monitor_ != nullptr) monitor_->Stop();
    if (thread_.joinable()) thread_.join();
    monitor_.reset();
    tracker_.reset();
    nvml_.reset();
  }

  // Opens NVML on the shipped dgx-a100 (once) and makes a tracker and a
  // monitor watching every GPU (anew); `real_clock`: the real clock and
  // short sweeps (for Run).
  void Start(bool real_clock) {
    if (nvml_ == nullptr) {
      fake_.UseMachine(std::string(GDP_MACHINES_DIR) + "/dgx-a100.yaml");
      auto nvml = Nvml::Open(fake_.root());
      ASSERT_TRUE(nvml.ok()) << nvml.status();
      nvml_ = *std::move(nvml);
      for (unsigned i = 0; i < *nvml_->DeviceCount(); ++i) {
        refs_.push_back({*nvml_->Uuid(*nvml_->DeviceByIndex(i)), i});
      }
    }
    std::vector<WatchedGpu> watched;
    for (const GpuRef& ref : refs_) {
      watched.push_back(WatchedAsDiscovered(*nvml_, ref));
    }
    HealthTrackerOptions t;
    t.quiet_period = absl::Seconds(60);
    t.probe_interval = absl::Seconds(10);
    tracker_ = std::make_unique<HealthTracker>(XidPolicy(), t);
    HealthMonitorOptions m;
    m.wait_slice = absl::Milliseconds(20);
    // A set answering GPU_IS_LOST again at once is made anew only then:
    // every remaking here is the one at once.
    m.retry_interval = absl::Seconds(30);
    if (real_clock) {
      m.sweep_interval = absl::Milliseconds(10);
    } else {
      m.sweep_interval = absl::Seconds(5);
      m.clock = [this] {
        absl::MutexLock lock(&mu_);
        return now_;
      };
    }
    monitor_ = std::make_unique<HealthMonitor>(*nvml_, *tracker_,
                                               std::move(watched), m);
    monitor_->Step(absl::ZeroDuration());  // event set made, GPUs registered
  }

  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

  // Appends `line` to the control file and returns once the fake applied
  // it: a throttle mask of GPU 7 (metrics only) written after it reads
  // back (the lines apply in order).
  void Applied(const std::string& line) {
    fake_.Inject(line);
    // 2 to 0x1ff: never GpuIdle alone, the fake's default.
    const unsigned long long mask = 2 + (marks_++ % 0x1fe);
    fake_.Inject("throttle 7 " + std::to_string(mask));
    const nvmlDevice_t gpu7 = *nvml_->DeviceByIndex(7);
    const absl::Time limit = absl::Now() + absl::Seconds(2);
    while (absl::Now() < limit) {
      absl::StatusOr<unsigned long long> now = nvml_->ThrottleReasons(gpu7);
      if (now.ok() && *now == mask) return;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    FAIL() << "the fake did not apply " << line;
  }

  Device Gpu(unsigned index) const { return GpuDevice(refs_[index]); }
  bool Healthy(unsigned index) const {
    return tracker_->HealthOf(Gpu(index)).health == Health::kHealthy;
  }
  std::string Reason(unsigned index) const {
    return tracker_->HealthOf(Gpu(index)).reason;
  }

  testing::FakeNvmlRoot fake_{"event-set", GDP_FAKE_NVML_LIB};
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::FromUnixSeconds(1700000000);
  unsigned marks_ = 0;
  std::unique_ptr<Nvml> nvml_;
  std::vector<GpuRef> refs_;
  std::unique_ptr<HealthTracker> tracker_;
  std::unique_ptr<HealthMonitor> monitor_;
  std::thread thread_;
};

TEST_F(MonitorEventSetTest, NoEventIsLostOrCountedTwiceAcrossALossAndARestore) {
  Start(/*real_clock=*/false);
  // Each point: an XID of its own on GPU 2 (and, once GPU 1 is back, on
  // GPU 1) and a single-bit ECC error of GPU 0, which are all alike.
  std::vector<std::string> xids;
  int singles = 0;
  auto point = [&](bool gpu1) {
    for (unsigned gpu : {2u, 1u}) {
      if (gpu == 1 && !gpu1) continue;
      // Counted process-wide: a number no run of the test used before.
      static int next_xid = 30000;
      xids.push_back(std::to_string(next_xid++));
      Applied("xid " + std::to_string(gpu) + " " + xids.back());
    }
    Applied("ecc 0 single");
    ++singles;
  };
  std::vector<double> before;
  const double singles_before = EventsCounted("single_bit_ecc", "");
  const double lost_before = EventsCounted("xid", "79");
  constexpr int kCycles = 8;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    Applied("lose 1");
    point(false);                          // queued behind its XID 79
    monitor_->Step(absl::ZeroDuration());  // GPU_IS_LOST: the set given up
    ASSERT_THAT(Reason(1), HasSubstr("GPU lost")) << cycle;
    point(false);                          // before the new set exists
    monitor_->Step(absl::ZeroDuration());  // the new set
    point(false);
    monitor_->Step(absl::ZeroDuration());
    Applied("restore 1");
    point(false);  // GPU 1 not yet registered again
    Advance(absl::Seconds(5));
    monitor_->Step(absl::ZeroDuration());  // a sweep registers GPU 1
    point(true);
    monitor_->Step(absl::ZeroDuration());
    point(true);
  }
  // Every XID once, and no more however long the monitor runs.
  auto all_seen = [&] {
    for (const std::string& x : xids) {
      if (EventsCounted("xid", x) < 1) return false;
    }
    return EventsCounted("single_bit_ecc", "") - singles_before >= singles;
  };
  const absl::Time limit = absl::Now() + absl::Seconds(2);
  while (!all_seen() && absl::Now() < limit) {
    monitor_->Step(absl::Milliseconds(20));
  }
  for (int i = 0; i < 5; ++i) monitor_->Step(absl::Milliseconds(5));
  for (const std::string& x : xids) {
    EXPECT_EQ(EventsCounted("xid", x), 1) << "XID " << x;
  }
  EXPECT_EQ(EventsCounted("single_bit_ecc", "") - singles_before, singles);
  EXPECT_EQ(EventsCounted("xid", "79") - lost_before, kCycles);
}

TEST_F(MonitorEventSetTest, AnXidRightAfterAnotherGpuIsLostIsSeenAtOnce) {
  // The failure cascade of issue 29: GPU 1 falls off the bus and, at once,
  // GPU 2 raises XID 48. The XID is injected as soon as the tracker knows
  // GPU 1 is lost, while the monitor remakes its event set.
  for (int run = 0; run < 20; ++run) {
    if (run > 0) {
      // GPU 1 back on the bus, and a new monitor (GPU 2 healthy again).
      monitor_->Stop();
      thread_.join();
      Applied("restore 1");
    }
    Start(/*real_clock=*/true);
    thread_ = std::thread([m = monitor_.get()] { m->Run(); });
    fake_.Inject("lose 1");
    const absl::Time lost_limit = absl::Now() + absl::Seconds(2);
    while (Reason(1).find("GPU lost") == std::string::npos &&
           absl::Now() < lost_limit) {
    }
    ASSERT_THAT(Reason(1), HasSubstr("GPU lost")) << "run " << run;
    const absl::Time xid = absl::Now();
    fake_.Inject("xid 2 48");
    while (Healthy(2) && absl::Now() < xid + absl::Seconds(2)) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ASSERT_FALSE(Healthy(2)) << "run " << run << ": the XID was lost";
    EXPECT_LT(absl::Now() - xid, absl::Milliseconds(100)) << "run " << run;
    EXPECT_THAT(Reason(2), HasSubstr("XID 48"));
  }
}

// TakeOver's matching: a GPU's first events on the new set that repeat its
// last ones on the old set are those that reached both.
TEST(NotTakenBeforeTest, Table) {
  const auto gpu_a = reinterpret_cast<nvmlDevice_t>(0x10);
  const auto gpu_b = reinterpret_cast<nvmlDevice_t>(0x20);
  auto xid = [](nvmlDevice_t d, unsigned long long x) {
    return NvmlEvent{d, nvmlEventTypeXidCriticalError, x, kNvmlAllInstances,
                     kNvmlAllInstances};
  };
  auto sbe = [](nvmlDevice_t d) {
    return NvmlEvent{d, nvmlEventTypeSingleBitEccError, 0, kNvmlAllInstances,
                     kNvmlAllInstances};
  };
  const struct {
    const char* name;
    std::vector<NvmlEvent> earlier, later, kept;
  } kCases[] = {
      {"nothing before", {}, {xid(gpu_a, 1)}, {xid(gpu_a, 1)}},
      {"nothing after", {xid(gpu_a, 1)}, {}, {}},
      {"all after the registration",
       {xid(gpu_a, 1), xid(gpu_a, 2)},
       {xid(gpu_a, 1), xid(gpu_a, 2), xid(gpu_a, 3)},
       {xid(gpu_a, 3)}},
      {"some before the registration",
       {xid(gpu_a, 1), xid(gpu_a, 2)},
       {xid(gpu_a, 2), xid(gpu_a, 3)},
       {xid(gpu_a, 3)}},
      {"none in common", {xid(gpu_a, 1)}, {xid(gpu_a, 2)}, {xid(gpu_a, 2)}},
      {"an earlier event repeated later is new",
       {xid(gpu_a, 1), xid(gpu_a, 2)},
       {xid(gpu_a, 1)},
       {xid(gpu_a, 1)}},
      {"per GPU",
       {xid(gpu_a, 1), xid(gpu_b, 1)},
       {xid(gpu_b, 1), xid(gpu_a, 1), xid(gpu_b, 2)},
       {xid(gpu_b, 2)}},
      {"instances count",
       {NvmlEvent{gpu_a, nvmlEventTypeXidCriticalError, 1, 3, 0}},
       {xid(gpu_a, 1)},
       {xid(gpu_a, 1)}},
      {"alike events: the longest run",
       {sbe(gpu_a), sbe(gpu_a), sbe(gpu_a)},
       {sbe(gpu_a), sbe(gpu_a), sbe(gpu_a), sbe(gpu_a)},
       {sbe(gpu_a)}},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(NotTakenBefore(c.earlier, c.later), c.kept) << c.name;
  }
}

}  // namespace
}  // namespace gdp
