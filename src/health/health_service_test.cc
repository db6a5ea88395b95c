// The health service against the project's fake libnvidia-ml.so.1 (a
// driver root, as on a node; pcie-t4: two GPUs, no MIG), with its monitor
// on a real thread sweeping every 50 ms and faults injected through the
// fake's control file.
#include "health/health_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "health/monitor_testing.h"
#include "health/state_file.h"
#include "testing/eventually.h"
#include "testing/fake_nvml_root.h"

namespace gdp {
namespace {

using gdp::testing::Eventually;
using ::testing::HasSubstr;

class HealthServiceTest : public ::testing::Test {
 protected:
  HealthServiceTest() : fake_("health-service", GDP_FAKE_NVML_LIB) {}

  void SetUp() override {
    fake_.UseMachine(std::string(GDP_MACHINES_DIR) + "/pcie-t4.yaml");
    auto nvml = Nvml::Open(fake_.root());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
    // As the daemon runs it: NVML calls under deadlines.
    nvml_->set_call_deadline(absl::Seconds(10));
    for (unsigned i = 0; i < 2; ++i) {
      GpuInfo g;
      g.index = i;
      g.uuid = *nvml_->Uuid(*nvml_->DeviceByIndex(i));
      node_.gpus.push_back(g);
      refs_.push_back({g.uuid, i});
    }
  }

  void TearDown() override {
    service_.reset();
    nvml_.reset();
  }

  // A service keeping its state in <fake>/state (this boot "boot-1"),
  // restored for node_ and counting changes in changes_.
  void MakeService(const std::string& disable_healthchecks = "") {
    service_ = std::make_unique<HealthService>(
        *nvml_, XidPolicy::FromEnvironment(disable_healthchecks, ""),
        HealthTrackerOptions{}, HealthStateOptions{StateDir(), "boot-1"});
    service_->Restore(node_, [this] { ++changes_; });
  }
  // Starts the monitor and gives it 100 ms to register for events (its
  // first round takes a few; InjectUntil covers a slower one).
  void StartMonitor() {
    HealthMonitorOptions o;
    o.sweep_interval = absl::Milliseconds(50);
    o.retry_interval = absl::Milliseconds(50);
    service_->StartMonitor(node_, o);
    absl::SleepFor(absl::Milliseconds(100));
  }

  std::string StateDir() const { return (fake_.dir() / "state").string(); }
  Health HealthOf(unsigned gpu) const {
    return service_->HealthOf(GpuDevice(refs_[gpu])).health;
  }

  testing::FakeNvmlRoot fake_;
  std::unique_ptr<Nvml> nvml_;
  NodeGpus node_;
  std::vector<GpuRef> refs_;
  std::atomic<int> changes_{0};
  std::unique_ptr<HealthService> service_;
};

TEST_F(HealthServiceTest, MonitorFeedsTheTrackerAndTheStateFileFollows) {
  MakeService();
  StartMonitor();
  EXPECT_TRUE(service_->enabled());
  ASSERT_TRUE(fake_.InjectUntil(
      "xid 1 48", [&] { return HealthOf(1) == Health::kUnhealthy; }));
  EXPECT_EQ(HealthOf(0), Health::kHealthy);
  EXPECT_THAT(service_->HealthOf(GpuDevice(refs_[1])).reason,
              HasSubstr("XID 48"));
  EXPECT_EQ(service_->nvml_failure(), "");
  // The callback runs, then the file is written, after the tracker
  // changed (on the monitor's thread).
  EXPECT_TRUE(Eventually([&] { return changes_.load() > 0; }));
  absl::StatusOr<HealthState> saved;
  EXPECT_TRUE(Eventually([&] {
    saved = ReadHealthState(HealthStatePath(StateDir()));
    return saved.ok();
  })) << saved.status();
  ASSERT_TRUE(saved.ok());
  EXPECT_TRUE(saved->gpus.contains(refs_[1].uuid));
  EXPECT_FALSE(saved->gpus.contains(refs_[0].uuid));

  // A service after a restart in the same boot restores it.
  service_.reset();
  MakeService();
  EXPECT_EQ(HealthOf(1), Health::kUnhealthy);
  EXPECT_THAT(service_->HealthOf(GpuDevice(refs_[1])).reason,
              HasSubstr("restored from the state file"));
  EXPECT_EQ(HealthOf(0), Health::kHealthy);
}

TEST_F(HealthServiceTest, ReloadStateMakesWhatTheOperatorClearedHealthy) {
  MakeService();
  StartMonitor();
  ASSERT_TRUE(fake_.InjectUntil(
      "xid 1 48", [&] { return HealthOf(1) == Health::kUnhealthy; }));
  // Saved, with the monitor's first read of what a reset changes: from
  // then on the service writes nothing new.
  const std::string path = HealthStatePath(StateDir());
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<HealthState> s = ReadHealthState(path);
    return s.ok() && s->gpus.contains(refs_[1].uuid) &&
           s->gpus.at(refs_[1].uuid).reset_markers.has_value();
  }));
  service_->ReloadState();  // the file is as the service wrote it
  EXPECT_EQ(HealthOf(1), Health::kUnhealthy);

  absl::StatusOr<HealthState> saved = ReadHealthState(path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  saved->gpus.erase(refs_[1].uuid);
  ASSERT_TRUE(WriteHealthStateText(path, SerializeHealthState(*saved)).ok());
  const int before = changes_.load();
  service_->ReloadState();
  EXPECT_EQ(HealthOf(1), Health::kHealthy);
  EXPECT_GT(changes_.load(), before) << "the change was pushed";
}

TEST_F(HealthServiceTest, FollowCountsAGpuNewToDiscoveryAsReset) {
  MakeService();
  StartMonitor();
  ASSERT_TRUE(fake_.InjectUntil(
      "xid 1 48", [&] { return HealthOf(1) == Health::kUnhealthy; }));
  ASSERT_TRUE(Eventually([&] { return changes_.load() > 0; }));
  // Served as it was: nothing new.
  service_->Follow(node_, node_);
  EXPECT_EQ(HealthOf(1), Health::kUnhealthy);
  NodeGpus without = node_;
  without.gpus.pop_back();
  service_->Follow(node_, without);
  EXPECT_EQ(HealthOf(1), Health::kUnhealthy) << "gone is not reset";
  const int before = changes_.load();
  service_->Follow(without, node_);
  EXPECT_EQ(HealthOf(1), Health::kHealthy);
  EXPECT_EQ(service_->HealthOf(GpuDevice(refs_[1])).reason, "");
  EXPECT_GT(changes_.load(), before);
}

// A GPU whose NVML calls hang at start-up is left out of discovery: its
// saved record stays in the file, untouched by every save, until it is
// found again (then restored) or the boot changes (then dropped).
TEST_F(HealthServiceTest, SavedStateOfAGpuLeftOutAtStartWaitsForIt) {
  const absl::Time since =
      absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
  HealthState file;
  file.boot_id = "boot-1";
  for (unsigned i = 0; i < 2; ++i) {
    SavedUnit u;
    u.state = SavedUnitState::kNeedsReset;
    u.reason = "XID 48 (double-bit ECC error)";
    u.cause = {HealthCause::Kind::kXid, 48};
    u.since = since;
    u.failures = {since};
    file.gpus[refs_[i].uuid] = SavedGpu{i, {u}};
  }
  const std::string path = HealthStatePath(StateDir());
  ASSERT_TRUE(WriteHealthStateText(path, SerializeHealthState(file)).ok());
  const SavedGpu left_out = file.gpus.at(refs_[1].uuid);

  NodeGpus all = node_;
  node_.gpus.pop_back();  // GPU 1 hung at start-up
  MakeService();
  EXPECT_EQ(HealthOf(0), Health::kUnhealthy);
  EXPECT_EQ(HealthOf(1), Health::kHealthy) << "not served, not tracked";
  absl::StatusOr<HealthState> saved = ReadHealthState(path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_THAT(saved->gpus.at(refs_[0].uuid).units.at(0).reason,
              HasSubstr("restored from the state file"))
      << "the first save wrote the file";
  ASSERT_TRUE(saved->gpus.contains(refs_[1].uuid));
  EXPECT_EQ(saved->gpus.at(refs_[1].uuid), left_out);

  // A later save (the operator cleared GPU 0) keeps it too.
  saved->gpus.erase(refs_[0].uuid);
  ASSERT_TRUE(WriteHealthStateText(path, SerializeHealthState(*saved)).ok());
  service_->ReloadState();
  EXPECT_EQ(HealthOf(0), Health::kHealthy);
  saved = ReadHealthState(path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_FALSE(saved->gpus.contains(refs_[0].uuid));
  ASSERT_TRUE(saved->gpus.contains(refs_[1].uuid));
  EXPECT_EQ(saved->gpus.at(refs_[1].uuid), left_out);

  // Found again: restored (not counted as reset), and saved as restored.
  const int before = changes_.load();
  service_->Follow(node_, all);
  EXPECT_EQ(HealthOf(1), Health::kUnhealthy);
  EXPECT_THAT(service_->HealthOf(GpuDevice(refs_[1])).reason,
              HasSubstr("XID 48"));
  EXPECT_GT(changes_.load(), before);
  saved = ReadHealthState(path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_TRUE(saved->gpus.contains(refs_[1].uuid));
  EXPECT_THAT(saved->gpus.at(refs_[1].uuid).units.at(0).reason,
              HasSubstr("restored from the state file"));

  // In another boot the whole file is dropped, held records with it.
  saved->gpus.erase(refs_[1].uuid);
  saved->gpus[refs_[1].uuid] = left_out;
  ASSERT_TRUE(WriteHealthStateText(path, SerializeHealthState(*saved)).ok());
  service_.reset();
  service_ = std::make_unique<HealthService>(
      *nvml_, XidPolicy::FromEnvironment("", ""), HealthTrackerOptions{},
      HealthStateOptions{StateDir(), "boot-2"});
  service_->Restore(node_, [this] { ++changes_; });
  service_->Follow(node_, all);
  EXPECT_EQ(HealthOf(1), Health::kHealthy);
  saved = ReadHealthState(path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->boot_id, "boot-2");
  EXPECT_TRUE(saved->gpus.empty());
}

TEST_F(HealthServiceTest, AfterStopNothingIsWatchedOrPushed) {
  MakeService();
  StartMonitor();
  fake_.Inject("lose 0");
  ASSERT_TRUE(Eventually([&] { return HealthOf(0) == Health::kUnhealthy; }));
  service_->Stop();
  const int before = changes_.load();
  fake_.Inject("lose 1");
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(HealthOf(1), Health::kHealthy);
  EXPECT_EQ(changes_.load(), before);
  service_->Stop();  // again: nothing
}

TEST_F(HealthServiceTest, ChecksOffWatchNothingAndKeepNoFile) {
  MakeService("all");
  StartMonitor();
  EXPECT_FALSE(service_->enabled());
  fake_.Inject("lose 0");
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(HealthOf(0), Health::kHealthy);
  service_->ReloadState();
  EXPECT_EQ(changes_.load(), 0);
  EXPECT_FALSE(std::filesystem::exists(HealthStatePath(StateDir())));
}

}  // namespace
}  // namespace gdp
