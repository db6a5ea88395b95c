// The monitor's health signals against the fake libnvidia-ml.so.1: row
// remapping and retired pages pending make a GPU need a reset (cleared by a
// reset), PCIe and throttle reasons are metrics only, an NVLink going
// inactive is counted, re-reads the topology and, when asked, makes the GPU
// unhealthy. Sweeps run on a fake clock; signals are read at every sweep.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "absl/synchronization/mutex.h"
#include "health/monitor.h"
#include "health/monitor_testing.h"
#include "metrics/exposition.h"
#include "metrics/registry.h"
#include "testing/fake_nvml_root.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class MonitorSignalsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    monitor_.reset();
    tracker_.reset();
    nvml_.reset();
  }

  // Opens NVML on shipped machine `name` (or the machine file at path
  // `name`) and watches every GPU; signals are read at every sweep (each
  // step advances the clock past it).
  void Start(const std::string& name, bool nvlink_down_unhealthy = false) {
    fake_.UseMachine(name[0] == '/' ? name
                                    : std::string(GDP_MACHINES_DIR) + "/" +
                                          name + ".yaml");
    auto nvml = Nvml::Open(fake_.root());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
    std::vector<WatchedGpu> watched;
    for (unsigned i = 0; i < *nvml_->DeviceCount(); ++i) {
      refs_.push_back({*nvml_->Uuid(*nvml_->DeviceByIndex(i)), i});
      watched.push_back({refs_.back(), {}});
    }
    tracker_ = std::make_unique<HealthTracker>(XidPolicy());
    HealthMonitorOptions m;
    m.wait_slice = absl::Milliseconds(20);
    m.sweep_interval = absl::Seconds(5);
    m.signals_interval = absl::Seconds(5);
    m.retry_interval = absl::Milliseconds(10);
    m.nvlink_down_unhealthy = nvlink_down_unhealthy;
    m.on_topology_change = [this] { ++topology_changes_; };
    m.clock = [this] {
      absl::MutexLock lock(&mu_);
      return now_;
    };
    monitor_ = std::make_unique<HealthMonitor>(*nvml_, *tracker_,
                                               std::move(watched), m);
    monitor_->Step(absl::ZeroDuration());
  }

  void Inject(const std::string& line) { fake_.Inject(line); }

  // Sweeps (the fake clock moves a sweep interval each time) until `done`,
  // for at most 5 s of real time.
  bool SweepUntil(const std::function<bool()>& done) {
    const absl::Time limit = absl::Now() + absl::Seconds(5);
    while (absl::Now() < limit) {
      {
        absl::MutexLock lock(&mu_);
        now_ += absl::Seconds(5);
      }
      monitor_->Step(absl::Milliseconds(20));
      if (done()) return true;
    }
    return false;
  }
  // A few sweeps, for what must not happen.
  void Sweeps(int n) {
    for (int i = 0; i < n; ++i) SweepUntil([] { return true; });
  }

  Device Gpu(unsigned index) const { return GpuDevice(refs_[index]); }
  bool Healthy(unsigned index) const {
    return tracker_->HealthOf(Gpu(index)).health == Health::kHealthy;
  }
  std::string Reason(unsigned index) const {
    return tracker_->HealthOf(Gpu(index)).reason;
  }
  // The metrics text now.
  static std::string Metrics() {
    return metrics::RenderText(metrics::DefaultRegistry().Collect());
  }
  // The sample line of `name` for GPU `index` (with `more` labels after
  // gpu and uuid), or "" if none.
  std::string Sample(const std::string& name, unsigned index,
                     const std::string& more = "") const {
    const std::string head = name + "{gpu=\"" + std::to_string(index) +
                             "\",uuid=\"" + refs_[index].uuid + "\"" + more +
                             "}";
    const std::string text = Metrics();
    const size_t at = text.find(head);
    if (at == std::string::npos) return "";
    return text.substr(at, text.find('\n', at) - at);
  }

  // The value of that sample (0 if none): counters are process-wide, so
  // a test compares them with what they were when it began.
  double SampleValue(const std::string& name, unsigned index,
                     const std::string& more = "") const {
    const std::string sample = Sample(name, index, more);
    const size_t space = sample.rfind(' ');
    return space == std::string::npos
               ? 0
               : std::strtod(sample.c_str() + space + 1, nullptr);
  }

  testing::FakeNvmlRoot fake_{"signals", GDP_FAKE_NVML_LIB};
  absl::Mutex mu_;
  absl::Time now_ = absl::FromUnixSeconds(1700000000);
  std::atomic<int> topology_changes_{0};
  std::unique_ptr<Nvml> nvml_;
  std::vector<GpuRef> refs_;
  std::unique_ptr<HealthTracker> tracker_;
  std::unique_ptr<HealthMonitor> monitor_;
};

TEST_F(MonitorSignalsTest, PendingRowRemapNeedsAResetAndTheResetClearsIt) {
  Start("dgx-a100");
  Inject("remap-pending 3");
  ASSERT_TRUE(SweepUntil([&] { return !Healthy(3); }));
  EXPECT_THAT(Reason(3), HasSubstr("row remapping pending"));
  EXPECT_THAT(Reason(3), HasSubstr("unhealthy until the GPU is reset"));
  EXPECT_EQ(tracker_->HealthOf(Gpu(3)).cause.kind, HealthCause::Kind::kEcc);
  EXPECT_TRUE(Healthy(2));
  Sweeps(3);  // still pending: still unhealthy, and no new failure
  EXPECT_FALSE(Healthy(3));
  EXPECT_EQ(tracker_->Export(now_).gpus.at(refs_[3].uuid).units.at(0).state,
            SavedUnitState::kNeedsReset);
  EXPECT_THAT(
      Sample("gpu_device_plugin_remapped_rows", 3, ",cause=\"uncorrectable\""),
      HasSubstr(" 1"));
  Inject("reset 3");
  ASSERT_TRUE(SweepUntil([&] { return Healthy(3); }));
}

TEST_F(MonitorSignalsTest, RemapFailureLastsUntilTheGpuIsReplaced) {
  Start("dgx-a100");
  Inject("remap-failure 5");
  ASSERT_TRUE(SweepUntil([&] { return !Healthy(5); }));
  EXPECT_THAT(Reason(5), HasSubstr("row remapping failed"));
  EXPECT_THAT(Reason(5),
              HasSubstr("unhealthy until the GPU is replaced or the node "
                        "reboots"));
  Inject("reset 5");  // a reset does not cure it
  Sweeps(3);
  EXPECT_FALSE(Healthy(5));
}

TEST_F(MonitorSignalsTest, RetiredPagesPendingNeedAReset) {
  Start("dgx1-v100");
  Inject("pages-pending 6");
  ASSERT_TRUE(SweepUntil([&] { return !Healthy(6); }));
  EXPECT_THAT(Reason(6), HasSubstr("retired pages pending"));
  Inject("reset 6");
  ASSERT_TRUE(SweepUntil([&] { return Healthy(6); }));
}

// A GPU that needs a reset after an XID or an uncorrectable ECC error is
// healthy again once NVML shows it was reset (nvidia-smi -r), though never
// lost: its recovery action back at NONE (R565 and later), or a volatile
// ECC count down. A GPU that still asks for a reset stays unhealthy.
TEST_F(MonitorSignalsTest, AResetIsSeenInWhatNvmlSaysOfTheGpu) {
  std::ifstream in(std::string(GDP_MACHINES_DIR) + "/dgx-a100.yaml");
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  const std::string old_driver = "\"550.54.15\"";
  ASSERT_NE(text.find(old_driver), std::string::npos);
  text.replace(text.find(old_driver), old_driver.size(), "\"570.124.06\"");
  const std::string machine = (fake_.dir() / "dgx-a100-r570.yaml").string();
  std::ofstream(machine) << text;
  Start(machine);
  Inject("xid 2 46");
  Inject("xid 3 62");
  Inject("ecc 4 double");
  ASSERT_TRUE(
      SweepUntil([&] { return !Healthy(2) && !Healthy(3) && !Healthy(4); }));
  Sweeps(2);  // what NVML says is read, and kept
  EXPECT_FALSE(Healthy(2));
  EXPECT_FALSE(Healthy(4));
  Inject("reset 2");
  Inject("reset 4");
  ASSERT_TRUE(SweepUntil([&] { return Healthy(2) && Healthy(4); }));
  Sweeps(3);
  EXPECT_FALSE(Healthy(3));
  EXPECT_THAT(Reason(3), HasSubstr("XID 62"));
}

TEST_F(MonitorSignalsTest, PcieAndThrottleAreMetricsOnly) {
  Start("dgx-a100");
  Inject("pcie 2 3 8");
  Inject("throttle 1 0x48");
  ASSERT_TRUE(SweepUntil([&] {
    return Sample("gpu_device_plugin_pcie_link_degraded", 2) != "" &&
           Sample("gpu_device_plugin_pcie_link_degraded", 2).back() == '1' &&
           Sample("gpu_device_plugin_throttle_slowdown", 1,
                  ",reason=\"hw_thermal\"")
                   .back() == '1';
  }));
  EXPECT_THAT(Sample("gpu_device_plugin_pcie_link_width", 2), HasSubstr(" 8"));
  EXPECT_THAT(Sample("gpu_device_plugin_pcie_link_generation", 2),
              HasSubstr(" 3"));
  EXPECT_EQ(Sample("gpu_device_plugin_pcie_link_degraded", 1).back(), '0');
  EXPECT_EQ(Sample("gpu_device_plugin_throttle_slowdown", 1,
                   ",reason=\"hw_slowdown\"")
                .back(),
            '1');
  EXPECT_EQ(
      Sample("gpu_device_plugin_throttle_slowdown", 1, ",reason=\"sw_thermal\"")
          .back(),
      '0');
  for (unsigned i = 0; i < 8; ++i) EXPECT_TRUE(Healthy(i)) << i;
}

TEST_F(MonitorSignalsTest, NvLinkDownIsCountedAndReReadsTheTopology) {
  Start("dgx-a100");
  Sweeps(1);  // the links are known active
  const int before = topology_changes_.load();
  const double down_before =
      SampleValue("gpu_device_plugin_nvlink_down_total", 4, ",link=\"5\"");
  Inject("nvlink 4 5 inactive");
  ASSERT_TRUE(SweepUntil([&] { return topology_changes_.load() > before; }));
  EXPECT_EQ(
      SampleValue("gpu_device_plugin_nvlink_down_total", 4, ",link=\"5\""),
      down_before + 1);
  EXPECT_TRUE(Healthy(4));  // not unhealthy unless asked
  Inject("nvlink 4 5 active");
  ASSERT_TRUE(
      SweepUntil([&] { return topology_changes_.load() > before + 1; }));
  EXPECT_TRUE(Healthy(4));
}

TEST_F(MonitorSignalsTest, NvLinkDownMakesTheGpuUnhealthyWhenAsked) {
  Start("dgx-a100", /*nvlink_down_unhealthy=*/true);
  Sweeps(1);
  Inject("nvlink 6 0 inactive");
  ASSERT_TRUE(SweepUntil([&] { return !Healthy(6); }));
  EXPECT_THAT(Reason(6), HasSubstr("NVLink 0 went inactive"));
  EXPECT_EQ(tracker_->HealthOf(Gpu(6)).cause.kind, HealthCause::Kind::kNvLink);
  Inject("nvlink 6 0 active");
  ASSERT_TRUE(SweepUntil([&] { return Healthy(6); }));
}

TEST_F(MonitorSignalsTest, FailingReadsAreNotUnhealthy) {
  Start("dgx-a100");
  Inject("fail-nvlink 0 999");
  Sweeps(3);
  EXPECT_TRUE(Healthy(0));
  EXPECT_THAT(Metrics(), Not(HasSubstr("nvlink_down_total{gpu=\"0\"")));
}

}  // namespace
}  // namespace gdp
