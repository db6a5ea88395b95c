// HealthTracker::Export / Import / OnCleared: what survives a restart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "health/health_state.h"
#include "health/tracker.h"

namespace gdp {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr unsigned kAll = kNvmlAllInstances;
constexpr char kNote[] =
    "; restored from the state file after a plugin restart";
const GpuRef kGpu0{"GPU-aaaa", 0};
const GpuRef kGpu1{"GPU-bbbb", 1};
const absl::Time t0 = absl::FromUnixSeconds(1700000000);

Device Whole(const GpuRef& gpu) {
  Device d;
  d.id = gpu.uuid;
  d.visible_id = gpu.uuid;
  d.gpu_uuid = gpu.uuid;
  d.gpu_index = gpu.index;
  return d;
}

Device Mig(const GpuRef& gpu, int gi, int ci) {
  Device d = Whole(gpu);
  d.id = "MIG-" + std::to_string(gi) + "-" + std::to_string(ci);
  d.visible_id = d.id;
  d.mig_gi = gi;
  d.mig_ci = ci;
  return d;
}

HealthEvent Xid(uint64_t xid, unsigned gi = kAll, unsigned ci = kAll) {
  HealthEvent e;
  e.xid = xid;
  e.gi = gi;
  e.ci = ci;
  return e;
}

std::unique_ptr<HealthTracker> Tracker() {
  return std::make_unique<HealthTracker>(XidPolicy(), HealthTrackerOptions{});
}

// A tracker restarted from `before`'s state at `now`, with both GPUs
// present.
std::unique_ptr<HealthTracker> Restarted(const HealthTracker& before,
                                         absl::Time saved_at, absl::Time now) {
  std::unique_ptr<HealthTracker> after = Tracker();
  after->Import(before.Export(saved_at), {kGpu0, kGpu1}, now);
  return after;
}

struct SurvivesCase {
  const char* name;
  std::function<void(HealthTracker&)> make;  // at t0
  std::vector<Device> devices;               // to compare
};

TEST(TrackerStateTest, EachUnhealthyStateSurvivesARestart) {
  const SurvivesCase cases[] = {
      {"needs-reset XID",
       [](HealthTracker& t) { t.OnEvent(kGpu0, Xid(48), t0); },
       {Whole(kGpu0), Whole(kGpu1)}},
      {"row remapping pending",
       [](HealthTracker& t) {
         t.OnNeedsReset(kGpu1, "row remapping pending",
                        "until the GPU is reset", {HealthCause::Kind::kEcc, 0},
                        t0);
       },
       {Whole(kGpu0), Whole(kGpu1)}},
      {"row remapping failed",
       [](HealthTracker& t) {
         t.OnNeedsReset(kGpu0, "row remapping failed",
                        "until the GPU is replaced or the node reboots",
                        {HealthCause::Kind::kEcc, 0}, t0);
       },
       {Whole(kGpu0), Mig(kGpu0, 2, 0)}},
      {"recoverable XID",
       [](HealthTracker& t) { t.OnEvent(kGpu1, Xid(94), t0); },
       {Whole(kGpu0), Whole(kGpu1)}},
      {"double-bit ECC",
       [](HealthTracker& t) {
         HealthEvent e;
         e.kind = HealthEvent::Kind::kDoubleBitEcc;
         t.OnEvent(kGpu0, e, t0);
       },
       {Whole(kGpu0)}},
      {"MIG instance",
       [](HealthTracker& t) { t.OnEvent(kGpu0, Xid(48, 2, 0), t0); },
       {Whole(kGpu0), Mig(kGpu0, 2, 0), Mig(kGpu0, 1, 0)}},
      {"MIG device not answering",
       [](HealthTracker& t) {
         t.OnMigProbeFailed({kGpu0, 1, 0}, "Unknown Error", t0);
       },
       {Mig(kGpu0, 1, 0), Mig(kGpu0, 2, 0)}},
      {"recoverable then a failed probe",
       [](HealthTracker& t) {
         t.OnEvent(kGpu0, Xid(94), t0 - absl::Minutes(1));
         t.OnProbe({kGpu0, kAll, kAll}, ProbeResult::kFail, "Unknown Error",
                   t0);
       },
       {Whole(kGpu0)}},
      {"held after a reset while flapping",
       [](HealthTracker& t) {
         t.OnEvent(kGpu0, Xid(48), t0 - absl::Minutes(3));
         t.OnReset(kGpu0, "reappeared", t0 - absl::Minutes(2));
         t.OnEvent(kGpu0, Xid(48), t0 - absl::Minutes(1));
         t.OnReset(kGpu0, "reappeared", t0);
       },
       {Whole(kGpu0)}},
  };
  for (const SurvivesCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<HealthTracker> before = Tracker();
    c.make(*before);
    std::unique_ptr<HealthTracker> after =
        Restarted(*before, t0 + absl::Seconds(1), t0 + absl::Seconds(2));
    for (const Device& d : c.devices) {
      SCOPED_TRACE(d.id);
      const DeviceHealth want = before->HealthOf(d);
      const DeviceHealth got = after->HealthOf(d);
      EXPECT_EQ(got.health, want.health);
      EXPECT_EQ(got.cause, want.cause);
      if (want.health == Health::kUnhealthy) {
        EXPECT_THAT(got.reason, HasSubstr(kNote));
        std::string without = got.reason;
        without.erase(without.find(kNote), sizeof(kNote) - 1);
        EXPECT_EQ(without, want.reason);
      } else {
        EXPECT_EQ(got.reason, "");
      }
    }
    // Probes are due when they were.
    EXPECT_EQ(after->NextProbe(), before->NextProbe());
    // And it saves the same state again (reasons noted).
    HealthState again = after->Export(t0 + absl::Seconds(3));
    HealthState first = before->Export(t0 + absl::Seconds(3));
    ASSERT_EQ(again.gpus.size(), first.gpus.size());
    for (auto& [uuid, gpu] : again.gpus) {
      for (SavedUnit& u : gpu.units) {
        if (!u.reason.empty()) {
          EXPECT_THAT(u.reason, EndsWith(kNote));
          u.reason.resize(u.reason.size() - (sizeof(kNote) - 1));
        }
      }
    }
    EXPECT_EQ(again, first);
  }
}

TEST(TrackerStateTest, ExportHoldsOnlyUnhealthyUnitsAndRecentFailures) {
  std::unique_ptr<HealthTracker> t = Tracker();
  t->OnEvent(kGpu0, Xid(13), t0);  // ignored by default
  EXPECT_THAT(t->Export(t0).gpus, IsEmpty());
  t->OnEvent(kGpu0, Xid(94), t0);
  HealthState s = t->Export(t0);
  ASSERT_THAT(s.gpus, SizeIs(1));
  const SavedUnit& u = s.gpus.at(kGpu0.uuid).units.at(0);
  EXPECT_EQ(u.state, SavedUnitState::kRecoverable);
  EXPECT_EQ(u.since, t0);
  EXPECT_EQ(u.quiet, absl::Minutes(1));
  EXPECT_EQ(u.probe_at, t0 + absl::Minutes(1));
  EXPECT_EQ(u.failures, std::vector<absl::Time>{t0});
  EXPECT_TRUE(s.boot_id.empty());
  // Healthy again: kept for its failure while that is in the flap window.
  t->OnProbe({kGpu0, kAll, kAll}, ProbeResult::kPass, "",
             t0 + absl::Minutes(1));
  s = t->Export(t0 + absl::Minutes(2));
  ASSERT_THAT(s.gpus, SizeIs(1));
  EXPECT_EQ(s.gpus.at(kGpu0.uuid).units.at(0).state, SavedUnitState::kHealthy);
  EXPECT_EQ(s.gpus.at(kGpu0.uuid).units.at(0).reason, "");
  EXPECT_THAT(t->Export(t0 + absl::Minutes(11)).gpus, IsEmpty());
}

TEST(TrackerStateTest, AResetDropsTheUnhealthyState) {
  std::unique_ptr<HealthTracker> t = Tracker();
  t->OnEvent(kGpu0, Xid(48), t0);
  t->OnReset(kGpu0, "reappeared in discovery", t0 + absl::Seconds(5));
  HealthState s = t->Export(t0 + absl::Seconds(5));
  for (const SavedUnit& u : s.gpus[kGpu0.uuid].units) {
    EXPECT_EQ(u.state, SavedUnitState::kHealthy);
  }
  std::unique_ptr<HealthTracker> after =
      Restarted(*t, t0 + absl::Seconds(5), t0 + absl::Seconds(6));
  EXPECT_EQ(after->HealthOf(Whole(kGpu0)).health, Health::kHealthy);
}

// The state file keeps what NVML said of a GPU that needs a reset; the
// restarted plugin's first read compares with it: reset meanwhile (the
// recovery action is back at NONE, or an ECC count went down) is healthy,
// still asking for a reset is not.
TEST(TrackerStateTest, AResetWhileThePluginWasDownShowsInTheFirstRead) {
  const NvmlResetMarkers asks{NVML_GPU_RECOVERY_ACTION_GPU_RESET, 0, 1};
  std::unique_ptr<HealthTracker> t = Tracker();
  t->OnEvent(kGpu0, Xid(46), t0);
  t->OnEvent(kGpu1, Xid(48), t0);
  t->OnResetMarkers(kGpu0, asks, t0);
  t->OnResetMarkers(kGpu1, NvmlResetMarkers{std::nullopt, 0, 2}, t0);
  HealthState saved = t->Export(t0);
  EXPECT_EQ(saved.gpus[kGpu0.uuid].reset_markers, asks);

  std::unique_ptr<HealthTracker> after =
      Restarted(*t, t0, t0 + absl::Minutes(1));
  EXPECT_TRUE(after->AwaitsReset(kGpu0.uuid));
  after->OnResetMarkers(kGpu0, asks, t0 + absl::Minutes(1));
  after->OnResetMarkers(kGpu1, NvmlResetMarkers{std::nullopt, 0, 2},
                        t0 + absl::Minutes(1));
  EXPECT_EQ(after->HealthOf(Whole(kGpu0)).health, Health::kUnhealthy);
  EXPECT_EQ(after->HealthOf(Whole(kGpu1)).health, Health::kUnhealthy);

  after = Restarted(*t, t0, t0 + absl::Minutes(1));
  after->OnResetMarkers(kGpu0,
                        NvmlResetMarkers{NVML_GPU_RECOVERY_ACTION_NONE, 0, 0},
                        t0 + absl::Minutes(1));
  after->OnResetMarkers(kGpu1, NvmlResetMarkers{std::nullopt, 0, 0},
                        t0 + absl::Minutes(1));
  EXPECT_EQ(after->HealthOf(Whole(kGpu0)).health, Health::kHealthy);
  EXPECT_EQ(after->HealthOf(Whole(kGpu1)).health, Health::kHealthy);

  // A file from before markers were kept: the first read is only kept.
  saved.gpus[kGpu0.uuid].reset_markers.reset();
  after = Tracker();
  after->Import(saved, {kGpu0}, t0 + absl::Minutes(1));
  after->OnResetMarkers(kGpu0,
                        NvmlResetMarkers{NVML_GPU_RECOVERY_ACTION_NONE, 0, 0},
                        t0 + absl::Minutes(1));
  EXPECT_EQ(after->HealthOf(Whole(kGpu0)).health, Health::kUnhealthy);
}

TEST(TrackerStateTest, ALostGpuThatIsPresentAgainWasReset) {
  std::unique_ptr<HealthTracker> t = Tracker();
  t->OnGpuLost(kGpu0, "GPU is lost", t0);
  ASSERT_EQ(t->HealthOf(Whole(kGpu0)).health, Health::kUnhealthy);
  std::unique_ptr<HealthTracker> after =
      Restarted(*t, t0, t0 + absl::Seconds(30));
  EXPECT_EQ(after->HealthOf(Whole(kGpu0)).health, Health::kHealthy);

  // Lost for the second time within the flap window: held after the reset.
  t->OnGpuAnswers(kGpu0, t0 + absl::Seconds(10));
  t->OnGpuLost(kGpu0, "GPU is lost", t0 + absl::Seconds(20));
  after = Restarted(*t, t0 + absl::Seconds(20), t0 + absl::Seconds(30));
  DeviceHealth h = after->HealthOf(Whole(kGpu0));
  EXPECT_EQ(h.health, Health::kUnhealthy);
  EXPECT_EQ(h.cause.kind, HealthCause::Kind::kFlapping);
  EXPECT_THAT(h.reason, HasSubstr("2nd failure"));
  EXPECT_EQ(after->NextProbe(), t0 + absl::Seconds(30) + absl::Minutes(2));
}

TEST(TrackerStateTest, FlappingKeepsDoublingTheQuietPeriodAcrossRestarts) {
  std::unique_ptr<HealthTracker> t = Tracker();
  const ProbeTarget whole{kGpu0, kAll, kAll};
  t->OnEvent(kGpu0, Xid(94), t0);
  t->OnProbe(whole, ProbeResult::kPass, "", t0 + absl::Minutes(1));
  t->OnEvent(kGpu0, Xid(94), t0 + absl::Minutes(2));  // 2nd: 2m
  EXPECT_THAT(t->HealthOf(Whole(kGpu0)).reason,
              HasSubstr("held unhealthy for 2m"));
  // Restart while held: the quiet period's end is kept.
  std::unique_ptr<HealthTracker> after =
      Restarted(*t, t0 + absl::Minutes(2), t0 + absl::Minutes(3));
  EXPECT_EQ(after->NextProbe(), t0 + absl::Minutes(4));
  after->OnProbe(whole, ProbeResult::kPass, "", t0 + absl::Minutes(4));
  // Restart again while healthy: the failures are kept.
  after = Restarted(*after, t0 + absl::Minutes(4), t0 + absl::Minutes(5));
  after->OnEvent(kGpu0, Xid(94), t0 + absl::Minutes(6));
  EXPECT_THAT(after->HealthOf(Whole(kGpu0)).reason,
              HasSubstr("held unhealthy for 4m: 3rd failure in 10m"));
  EXPECT_EQ(after->NextProbe(), t0 + absl::Minutes(10));
}

TEST(TrackerStateTest, FailuresOlderThanTheFlapWindowAreDropped) {
  std::unique_ptr<HealthTracker> t = Tracker();
  t->OnEvent(kGpu0, Xid(94), t0);
  t->OnProbe({kGpu0, kAll, kAll}, ProbeResult::kPass, "",
             t0 + absl::Minutes(1));
  // Saved at once, restarted much later.
  std::unique_ptr<HealthTracker> after =
      Restarted(*t, t0 + absl::Minutes(1), t0 + absl::Minutes(20));
  EXPECT_THAT(after->Export(t0 + absl::Minutes(20)).gpus, IsEmpty());
  after->OnEvent(kGpu0, Xid(94), t0 + absl::Minutes(20));
  EXPECT_EQ(after->HealthOf(Whole(kGpu0)).reason,
            "XID 94 (ROBUST_CHANNEL_CONTAINED_ERROR, catalogue RESTART_APP => "
            "recoverable); held unhealthy for 1m");
}

TEST(TrackerStateTest, OnlyPresentGpusAreImported) {
  std::unique_ptr<HealthTracker> t = Tracker();
  t->OnEvent(kGpu0, Xid(48), t0);
  t->OnEvent(kGpu1, Xid(48), t0);
  std::unique_ptr<HealthTracker> after = Tracker();
  int changes = 0;
  after->SetOnChange([&] { ++changes; });
  EXPECT_EQ(after->Import(t->Export(t0), {{kGpu1.uuid, 5}}, t0), 1u);
  EXPECT_EQ(after->HealthOf(Whole(kGpu0)).health, Health::kHealthy);
  EXPECT_EQ(after->HealthOf(Whole(kGpu1)).health, Health::kUnhealthy);
  EXPECT_EQ(changes, 1);
  HealthState s = after->Export(t0);
  ASSERT_THAT(s.gpus, SizeIs(1));
  EXPECT_EQ(s.gpus.at(kGpu1.uuid).index, 5u);  // the present index
}

TEST(TrackerStateTest, TheRestoredNoteIsAddedOnce) {
  std::unique_ptr<HealthTracker> t = Tracker();
  t->OnEvent(kGpu0, Xid(48), t0);
  std::unique_ptr<HealthTracker> once = Restarted(*t, t0, t0);
  std::unique_ptr<HealthTracker> twice = Restarted(*once, t0, t0);
  EXPECT_EQ(twice->HealthOf(Whole(kGpu0)).reason,
            once->HealthOf(Whole(kGpu0)).reason);
  EXPECT_THAT(twice->HealthOf(Whole(kGpu0)).reason, EndsWith(kNote));
}

TEST(TrackerStateTest, ClearingForgetsTheGpu) {
  std::unique_ptr<HealthTracker> t = Tracker();
  int changes = 0;
  t->SetOnChange([&] { ++changes; });
  t->OnEvent(kGpu0, Xid(94), t0);
  t->OnEvent(kGpu1, Xid(48), t0);
  changes = 0;
  t->OnCleared(kGpu1, "cleared by the operator", t0 + absl::Seconds(1));
  EXPECT_EQ(t->HealthOf(Whole(kGpu1)).health, Health::kHealthy);
  EXPECT_EQ(t->HealthOf(Whole(kGpu0)).health, Health::kUnhealthy);
  EXPECT_EQ(changes, 1);
  t->OnCleared(kGpu1, "again", t0 + absl::Seconds(2));  // unknown now
  EXPECT_EQ(changes, 1);
  // Its failures are forgotten too: the next one is the first.
  t->OnEvent(kGpu1, Xid(94), t0 + absl::Seconds(3));
  EXPECT_THAT(t->HealthOf(Whole(kGpu1)).reason,
              EndsWith("held unhealthy for 1m"));
  EXPECT_THAT(t->Export(t0 + absl::Seconds(3)).gpus, SizeIs(2));
}

}  // namespace
}  // namespace gdp
