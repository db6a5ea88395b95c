#include "health/tracker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device/device_set.h"
#include "health/apply.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

constexpr unsigned kAll = kNvmlAllInstances;
const GpuRef kGpu0{"GPU-aaaa", 0};
const GpuRef kGpu1{"GPU-bbbb", 1};

Device Whole(const GpuRef& gpu, int replica = -1) {
  Device d;
  d.id = replica < 0 ? gpu.uuid : gpu.uuid + "::" + std::to_string(replica);
  d.visible_id = gpu.uuid;
  d.gpu_uuid = gpu.uuid;
  d.gpu_index = gpu.index;
  d.replica = replica;
  return d;
}

Device Mig(const GpuRef& gpu, int gi, int ci, int replica = -1) {
  Device d = Whole(gpu, replica);
  d.id = "MIG-" + std::to_string(gi) + "-" + std::to_string(ci) +
         (replica < 0 ? "" : "::" + std::to_string(replica));
  d.visible_id = d.id;
  d.mig_gi = gi;
  d.mig_ci = ci;
  return d;
}

HealthEvent Xid(uint64_t xid, unsigned gi = kAll, unsigned ci = kAll) {
  HealthEvent e;
  e.kind = HealthEvent::Kind::kXid;
  e.xid = xid;
  e.gi = gi;
  e.ci = ci;
  return e;
}

HealthEvent Ecc(bool double_bit) {
  HealthEvent e;
  e.kind = double_bit ? HealthEvent::Kind::kDoubleBitEcc
                      : HealthEvent::Kind::kSingleBitEcc;
  return e;
}

class TrackerTest : public ::testing::Test {
 protected:
  TrackerTest() { Make(XidPolicy(), {}); }

  void Make(XidPolicy policy, HealthTrackerOptions options) {
    tracker_ = std::make_unique<HealthTracker>(std::move(policy), options);
    tracker_->SetOnChange([this] { ++changes_; });
    changes_ = 0;
  }

  bool Healthy(const Device& d) {
    return tracker_->HealthOf(d).health == Health::kHealthy;
  }
  std::string Reason(const Device& d) { return tracker_->HealthOf(d).reason; }

  absl::Time t0_ = absl::FromUnixSeconds(1700000000);
  std::unique_ptr<HealthTracker> tracker_;
  int changes_ = 0;
};

TEST_F(TrackerTest, IgnoredEventsChangeNothing) {
  tracker_->OnEvent(kGpu0, Xid(13), t0_);
  tracker_->OnEvent(kGpu0, Xid(109), t0_);
  tracker_->OnEvent(kGpu0, Ecc(false), t0_);
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  EXPECT_EQ(tracker_->generation(), 0u);
  EXPECT_EQ(changes_, 0);
  EXPECT_EQ(tracker_->NextProbe(), absl::InfiniteFuture());
}

TEST_F(TrackerTest, RecoverableIsProbedAfterTheQuietPeriod) {
  tracker_->OnEvent(kGpu0, Xid(94), t0_);
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_EQ(Reason(Whole(kGpu0)),
            "XID 94 (ROBUST_CHANNEL_CONTAINED_ERROR, catalogue RESTART_APP => "
            "recoverable); held unhealthy for 1m");
  EXPECT_TRUE(Healthy(Whole(kGpu1)));
  EXPECT_EQ(changes_, 1);
  EXPECT_EQ(tracker_->NextProbe(), t0_ + absl::Seconds(60));
  EXPECT_THAT(tracker_->DueProbes(t0_ + absl::Seconds(59)), IsEmpty());
  std::vector<ProbeTarget> due = tracker_->DueProbes(t0_ + absl::Seconds(60));
  ASSERT_THAT(due, SizeIs(1));
  EXPECT_EQ(due[0].gpu.uuid, kGpu0.uuid);
  EXPECT_EQ(due[0].gpu.index, 0u);
  EXPECT_EQ(due[0].gi, kAll);
  EXPECT_EQ(due[0].ci, kAll);
  tracker_->OnProbe(due[0], ProbeResult::kPass, "", t0_ + absl::Seconds(60));
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  EXPECT_EQ(Reason(Whole(kGpu0)), "");
  EXPECT_EQ(changes_, 2);
  EXPECT_EQ(tracker_->NextProbe(), absl::InfiniteFuture());
}

// What made a device unhealthy, by kind, for those who class it (DRA
// taints); cleared when it recovers.
TEST_F(TrackerTest, CauseOfEachKindOfFailure) {
  using K = HealthCause::Kind;
  auto cause = [&](const Device& d) { return tracker_->HealthOf(d).cause; };
  EXPECT_EQ(cause(Whole(kGpu0)), HealthCause{});
  tracker_->OnEvent(kGpu0, Xid(94), t0_);
  EXPECT_EQ(cause(Whole(kGpu0)), (HealthCause{K::kXid, 94}));
  tracker_->OnEvent(kGpu1, Ecc(true), t0_);
  EXPECT_EQ(cause(Whole(kGpu1)).kind, K::kEcc);
  tracker_->OnGpuLost(kGpu0, "GPU_IS_LOST", t0_);  // worse: lost wins
  EXPECT_EQ(cause(Whole(kGpu0)), (HealthCause{K::kLost, 0}));
  tracker_->OnNvmlFailure("nvmlEventSetWait_v2 failed", t0_);
  EXPECT_EQ(cause(Whole(kGpu1)).kind, K::kNvml);
  tracker_->OnNvmlWorks(t0_);
  EXPECT_EQ(cause(Whole(kGpu1)).kind, K::kEcc);
  tracker_->OnGpuAnswers(kGpu0, t0_ + absl::Seconds(1));
  EXPECT_EQ(cause(Whole(kGpu0)), HealthCause{});
  // A GPU that failed twice in the window is held after its reset.
  tracker_->OnGpuLost(kGpu0, "again", t0_ + absl::Seconds(2));
  tracker_->OnGpuAnswers(kGpu0, t0_ + absl::Seconds(3));
  EXPECT_EQ(cause(Whole(kGpu0)).kind, K::kFlapping);
  // ApplyHealth carries it into the advertised devices.
  DeviceSet set({Whole(kGpu0), Whole(kGpu1)});
  ApplyHealth(*tracker_, set);
  EXPECT_EQ(set.Get()->Find(kGpu0.uuid)->unhealthy_cause.kind, K::kFlapping);
  EXPECT_EQ(set.Get()->Find(kGpu1.uuid)->unhealthy_cause.kind, K::kEcc);
}

TEST_F(TrackerTest, NewEventRestartsTheQuietPeriod) {
  tracker_->OnEvent(kGpu0, Xid(94), t0_);
  tracker_->OnEvent(kGpu0, Xid(8), t0_ + absl::Seconds(30));
  EXPECT_EQ(changes_, 1);  // still the same unhealthy state
  EXPECT_THAT(tracker_->DueProbes(t0_ + absl::Seconds(60)), IsEmpty());
  // A probe result from before the new event is stale.
  tracker_->OnProbe({kGpu0}, ProbeResult::kPass, "", t0_ + absl::Seconds(60));
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_THAT(tracker_->DueProbes(t0_ + absl::Seconds(90)), SizeIs(1));
}

TEST_F(TrackerTest, FailedProbeIsRetried) {
  tracker_->OnEvent(kGpu0, Xid(94), t0_);
  const absl::Time t1 = t0_ + absl::Seconds(60);
  tracker_->OnProbe({kGpu0}, ProbeResult::kFail, "nvmlDeviceGetMemoryInfo: x",
                    t1);
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_THAT(Reason(Whole(kGpu0)),
              HasSubstr("; last probe failed: nvmlDeviceGetMemoryInfo: x"));
  EXPECT_EQ(tracker_->NextProbe(), t1 + absl::Seconds(10));
  EXPECT_THAT(tracker_->DueProbes(t1 + absl::Seconds(9)), IsEmpty());
  tracker_->OnProbe({kGpu0}, ProbeResult::kPass, "", t1 + absl::Seconds(10));
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
}

TEST_F(TrackerTest, NeedsResetWaitsForTheGpuToComeBack) {
  tracker_->OnEvent(kGpu0, Xid(46), t0_);
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_THAT(Reason(Whole(kGpu0)),
              HasSubstr("XID 46 (ROBUST_CHANNEL_GPU_TIMEOUT_ERROR, "
                        "catalogue RESET_GPU => needs-reset); unhealthy "
                        "until the GPU is reset"));
  EXPECT_EQ(tracker_->NextProbe(), absl::InfiniteFuture());
  // Answering without having been lost is no reset.
  tracker_->OnGpuAnswers(kGpu0, t0_ + absl::Hours(2));
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  tracker_->OnGpuLost(kGpu0, "nvmlDeviceGetMemoryInfo: GPU is lost",
                      t0_ + absl::Hours(2));
  EXPECT_THAT(Reason(Whole(kGpu0)),
              HasSubstr("GPU lost (nvmlDeviceGetMemoryInfo: GPU is lost); "
                        "unhealthy until it answers again"));
  tracker_->OnGpuAnswers(kGpu0, t0_ + absl::Hours(3));
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  EXPECT_EQ(changes_, 3);
}

// XID 79 says the GPU fell off the bus: it is lost, and answering NVML
// again, however soon (a sweep may never have seen it lost), is its reset.
TEST_F(TrackerTest, FallenOffTheBusIsLostUntilItAnswers) {
  tracker_->OnEvent(kGpu0, Xid(79), t0_);
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_THAT(Reason(Whole(kGpu0)),
              HasSubstr("GPU lost (XID 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_"
                        "THE_BUS, catalogue RESTART_BM => needs-reset): it "
                        "fell off the bus); unhealthy until it answers again"));
  EXPECT_EQ(tracker_->HealthOf(Whole(kGpu0)).cause.kind,
            HealthCause::Kind::kLost);
  EXPECT_FALSE(tracker_->AwaitsReset(kGpu0.uuid));  // lost, not waiting
  // A sweep that finds it lost changes nothing.
  tracker_->OnGpuLost(kGpu0, "nvmlDeviceGetMemoryInfo: GPU is lost", t0_);
  EXPECT_EQ(changes_, 1);
  tracker_->OnGpuAnswers(kGpu0, t0_ + absl::Seconds(1));
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  // An instance named with it changes nothing: the whole GPU is lost.
  tracker_->OnEvent(kGpu1, Xid(79, 9, 0), t0_);
  EXPECT_FALSE(Healthy(Whole(kGpu1)));
  EXPECT_FALSE(Healthy(Mig(kGpu1, 2, 0)));
}

// What NVML says of a GPU that a reset changes, read twice: whether the
// second read shows a reset since the first.
TEST(ResetEvidenceTest, Table) {
  constexpr unsigned kNone = NVML_GPU_RECOVERY_ACTION_NONE;
  constexpr unsigned kReset = NVML_GPU_RECOVERY_ACTION_GPU_RESET;
  const std::optional<unsigned> no_field;
  struct Case {
    const char* name;
    NvmlResetMarkers before, now;
    const char* evidence;  // "" for none
  } cases[] = {
      {"reset_to_none",
       {kReset, 0, 0},
       {kNone, 0, 0},
       "from GPU reset to none"},
      {"still_reset", {kReset, 0, 1}, {kReset, 0, 1}, ""},
      {"still_reset_counts_down", {kReset, 3, 1}, {kReset, 0, 0}, ""},
      {"reboot_to_none",
       {NVML_GPU_RECOVERY_ACTION_NODE_REBOOT, 0, 0},
       {kNone, 0, 0},
       "from node reboot to none"},
      {"drain_and_reset_to_none",
       {NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET, 0, 0},
       {kNone, 0, 0},
       "from drain P2P and reset to none"},
      {"bus_reset_to_none",
       {NVML_GPU_RECOVERY_ACTION_BUS_RESET, 0, 0},
       {kNone, 0, 0},
       "from PCIe bus reset to none"},
      {"drain_p2p_to_none",
       {NVML_GPU_RECOVERY_ACTION_DRAIN_P2P, 0, 0},
       {kNone, 0, 0},
       ""},
      {"imex_to_none",
       {NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN, 0, 0},
       {kNone, 0, 0},
       ""},
      {"unknown_action_to_none", {99, 0, 0}, {kNone, 0, 0}, ""},
      {"reset_to_no_field", {kReset, 0, 0}, {no_field, 0, 0}, ""},
      {"none_throughout", {kNone, 0, 0}, {kNone, 0, 0}, ""},
      {"dbe_down", {kNone, 0, 2}, {kNone, 0, 0}, "uncorrectable 2 to 0"},
      {"sbe_down_no_field",
       {no_field, 7, 0},
       {no_field, 1, 0},
       "corrected 7 to 1"},
      {"counts_up", {kNone, 1, 1}, {kNone, 5, 2}, ""},
      {"count_unknown_now",
       {kNone, 4, 4},
       {kNone, std::nullopt, std::nullopt},
       ""},
  };
  for (const Case& c : cases) {
    const std::string got = ResetEvidence(c.before, c.now);
    if (*c.evidence == '\0') {
      EXPECT_EQ(got, "") << c.name;
    } else {
      EXPECT_THAT(got, HasSubstr(c.evidence)) << c.name;
    }
  }
}

// A GPU that needs a reset keeps the first read after its failure; a read
// that shows a reset since makes it healthy.
TEST_F(TrackerTest, ResetMarkersShowingAResetMakeTheGpuHealthy) {
  const NvmlResetMarkers asks{NVML_GPU_RECOVERY_ACTION_GPU_RESET, 0, 0};
  const NvmlResetMarkers done{NVML_GPU_RECOVERY_ACTION_NONE, 0, 0};
  // Reads of a GPU that needs no reset are not kept: a reset before the
  // failure is no reset after it.
  tracker_->OnResetMarkers(kGpu0, asks, t0_);
  tracker_->OnEvent(kGpu0, Xid(46), t0_);
  EXPECT_TRUE(tracker_->AwaitsReset(kGpu0.uuid));
  tracker_->OnResetMarkers(kGpu0, done, t0_);  // the first read: kept
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  tracker_->OnResetMarkers(kGpu0, asks, t0_);  // asked for later
  EXPECT_EQ(changes_, 3);                      // kept for the state file
  EXPECT_EQ(tracker_->Export(t0_).gpus.at(kGpu0.uuid).reset_markers, asks);
  tracker_->OnResetMarkers(kGpu0, asks, t0_ + absl::Seconds(5));
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_EQ(changes_, 3);  // the same read changes nothing
  tracker_->OnResetMarkers(kGpu0, done, t0_ + absl::Seconds(10));
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  EXPECT_FALSE(tracker_->AwaitsReset(kGpu0.uuid));
  EXPECT_FALSE(tracker_->Export(t0_).gpus.at(kGpu0.uuid).reset_markers);
  // A MIG instance that needs a reset: the GPU's reset clears it too.
  tracker_->OnEvent(kGpu1, Xid(48, 9, 0), t0_);
  tracker_->OnResetMarkers(kGpu1, NvmlResetMarkers{std::nullopt, 0, 1}, t0_);
  tracker_->OnResetMarkers(kGpu1, NvmlResetMarkers{std::nullopt, 0, 0}, t0_);
  EXPECT_TRUE(Healthy(Mig(kGpu1, 9, 0)));
}

TEST_F(TrackerTest, ResetMarkersOfAFlappingGpuHoldIt) {
  tracker_->OnEvent(kGpu0, Xid(94), t0_);
  tracker_->OnProbe({kGpu0}, ProbeResult::kPass, "", t0_ + absl::Minutes(1));
  tracker_->OnEvent(kGpu0, Xid(46), t0_ + absl::Minutes(2));
  tracker_->OnResetMarkers(kGpu0, NvmlResetMarkers{1, 0, 0}, t0_);
  tracker_->OnResetMarkers(kGpu0, NvmlResetMarkers{0, 0, 0},
                           t0_ + absl::Minutes(3));
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_THAT(Reason(Whole(kGpu0)),
              HasSubstr("reset (NVML's GPU recovery action went from GPU "
                        "reset to none) after its 2nd failure"));
  EXPECT_EQ(tracker_->NextProbe(), t0_ + absl::Minutes(5));
}

TEST_F(TrackerTest, ExplicitResetClearsEveryUnitOfTheGpu) {
  tracker_->OnEvent(kGpu0, Xid(48), t0_);
  tracker_->OnEvent(kGpu0, Xid(94, 9, 0), t0_);
  tracker_->OnEvent(kGpu1, Xid(48), t0_);
  tracker_->OnReset(kGpu0, "it reappeared in discovery", t0_ + absl::Hours(1));
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  EXPECT_TRUE(Healthy(Mig(kGpu0, 9, 0)));
  EXPECT_FALSE(Healthy(Whole(kGpu1)));
  EXPECT_THAT(tracker_->DueProbes(t0_ + absl::Hours(2)), IsEmpty());
}

TEST_F(TrackerTest, EccEvents) {
  tracker_->OnEvent(kGpu0, Ecc(false), t0_);
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  tracker_->OnEvent(kGpu0, Ecc(true), t0_);
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_THAT(Reason(Whole(kGpu0)),
              HasSubstr("double-bit ECC error (as XID 48: "
                        "ROBUST_CHANNEL_GPU_ECC_DBE, catalogue "
                        "WORKFLOW_XID_48 => needs-reset)"));
}

TEST_F(TrackerTest, WorseEventUpgradesMilderDoesNot) {
  tracker_->OnEvent(kGpu0, Xid(94), t0_);
  tracker_->OnEvent(kGpu0, Xid(95), t0_ + absl::Seconds(1));
  EXPECT_EQ(changes_, 2);
  EXPECT_THAT(Reason(Whole(kGpu0)), HasSubstr("XID 95"));
  EXPECT_EQ(tracker_->NextProbe(), absl::InfiniteFuture());
  tracker_->OnEvent(kGpu0, Xid(94), t0_ + absl::Seconds(2));
  EXPECT_EQ(changes_, 2);
  EXPECT_THAT(Reason(Whole(kGpu0)), HasSubstr("XID 95"));
}

TEST_F(TrackerTest, MigEventsAffectOnlyTheirInstance) {
  const Device mig9 = Mig(kGpu0, 9, 0), mig2 = Mig(kGpu0, 2, 0);
  const Device mig3a = Mig(kGpu0, 3, 0), mig3b = Mig(kGpu0, 3, 1);
  tracker_->OnEvent(kGpu0, Xid(94, 9, 0), t0_);
  EXPECT_FALSE(Healthy(mig9));
  EXPECT_THAT(Reason(mig9), HasSubstr("GPU instance 9 compute instance 0: "
                                      "XID 94"));
  EXPECT_TRUE(Healthy(mig2));
  EXPECT_TRUE(Healthy(mig3a));
  // A whole-GPU device holds every instance.
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_TRUE(Healthy(Whole(kGpu1)));
  // All compute instances of GPU instance 3.
  tracker_->OnEvent(kGpu0, Xid(94, 3, kAll), t0_);
  EXPECT_FALSE(Healthy(mig3a));
  EXPECT_FALSE(Healthy(mig3b));
  EXPECT_TRUE(Healthy(mig2));
  std::vector<ProbeTarget> due = tracker_->DueProbes(t0_ + absl::Minutes(1));
  ASSERT_THAT(due, SizeIs(2));
  for (const ProbeTarget& t : due) {
    tracker_->OnProbe(t, ProbeResult::kPass, "", t0_ + absl::Minutes(1));
  }
  EXPECT_TRUE(Healthy(mig9));
  EXPECT_TRUE(Healthy(mig3b));
  // No instance named: the whole GPU and every MIG device.
  tracker_->OnEvent(kGpu0, Xid(79), t0_ + absl::Minutes(2));
  EXPECT_FALSE(Healthy(mig2));
  EXPECT_FALSE(Healthy(mig9));
}

TEST_F(TrackerTest, WholeGpuReasonWinsOverInstanceOnes) {
  tracker_->OnEvent(kGpu0, Xid(94, 9, 0), t0_);
  tracker_->OnEvent(kGpu0, Xid(94), t0_);
  EXPECT_THAT(Reason(Mig(kGpu0, 9, 0)), Not(HasSubstr("GPU instance")));
}

TEST_F(TrackerTest, MigProbeFailureFromASweepIsRecoverable) {
  const ProbeTarget mig{kGpu0, 3, 0};
  tracker_->OnMigProbeFailed(mig, "nvmlDeviceGetMemoryInfo: Unknown Error",
                             t0_);
  EXPECT_FALSE(Healthy(Mig(kGpu0, 3, 0)));
  EXPECT_TRUE(Healthy(Mig(kGpu0, 4, 0)));
  EXPECT_EQ(tracker_->HealthOf(Mig(kGpu0, 3, 0)).cause.kind,
            HealthCause::Kind::kNvml);
  EXPECT_THAT(Reason(Mig(kGpu0, 3, 0)),
              HasSubstr("MIG device does not answer NVML "
                        "(nvmlDeviceGetMemoryInfo: Unknown Error); held "
                        "unhealthy for 1m"));
  EXPECT_EQ(changes_, 1);
  // The next sweeps find it failing still: its quiet period runs on.
  tracker_->OnMigProbeFailed(mig, "again", t0_ + absl::Seconds(30));
  EXPECT_EQ(changes_, 1);
  EXPECT_EQ(tracker_->NextProbe(), t0_ + absl::Seconds(60));
  std::vector<ProbeTarget> due = tracker_->DueProbes(t0_ + absl::Seconds(60));
  ASSERT_THAT(due, SizeIs(1));
  EXPECT_EQ(due[0].gi, 3u);
  EXPECT_EQ(due[0].ci, 0u);
  tracker_->OnProbe(due[0], ProbeResult::kPass, "", t0_ + absl::Seconds(60));
  EXPECT_TRUE(Healthy(Mig(kGpu0, 3, 0)));
  // A unit that is unhealthy for a worse reason keeps it.
  tracker_->OnEvent(kGpu0, Xid(48, 3, 0), t0_ + absl::Seconds(61));
  const std::string reason = Reason(Mig(kGpu0, 3, 0));
  tracker_->OnMigProbeFailed(mig, "x", t0_ + absl::Seconds(62));
  EXPECT_EQ(Reason(Mig(kGpu0, 3, 0)), reason);
}

TEST_F(TrackerTest, GoneInstanceIsDropped) {
  tracker_->OnEvent(kGpu0, Xid(94, 9, 0), t0_);
  tracker_->OnProbe({kGpu0, 9, 0}, ProbeResult::kGone, "no MIG device",
                    t0_ + absl::Minutes(1));
  EXPECT_TRUE(Healthy(Mig(kGpu0, 9, 0)));
}

TEST_F(TrackerTest, LostDuringProbeMakesTheGpuLost) {
  tracker_->OnEvent(kGpu0, Xid(94, 9, 0), t0_);
  tracker_->OnProbe({kGpu0, 9, 0}, ProbeResult::kLost, "GPU is lost",
                    t0_ + absl::Minutes(1));
  EXPECT_FALSE(Healthy(Mig(kGpu0, 2, 0)));
  EXPECT_THAT(Reason(Mig(kGpu0, 2, 0)), HasSubstr("GPU lost (GPU is lost)"));
  // The instance's probe moved on: nothing is due at once.
  EXPECT_THAT(tracker_->DueProbes(t0_ + absl::Minutes(1)), IsEmpty());
  tracker_->OnGpuAnswers(kGpu0, t0_ + absl::Minutes(2));
  EXPECT_TRUE(Healthy(Mig(kGpu0, 9, 0)));
  EXPECT_TRUE(Healthy(Mig(kGpu0, 2, 0)));
}

TEST_F(TrackerTest, ReplicasAndResourcesShareTheUnit) {
  tracker_->OnEvent(kGpu0, Xid(94), t0_);
  const Device devices[] = {Whole(kGpu0), Whole(kGpu0, 0), Whole(kGpu0, 7)};
  for (const Device& d : devices) {
    EXPECT_FALSE(Healthy(d)) << d.id;
    EXPECT_EQ(Reason(d), Reason(devices[0])) << d.id;
  }
  Device by_index = Whole(kGpu0);
  by_index.id = "0";  // another resource advertising by index
  EXPECT_FALSE(Healthy(by_index));
  EXPECT_TRUE(Healthy(Mig(kGpu1, 9, 0, 3)));
}

TEST_F(TrackerTest, FlappingDoublesTheQuietPeriodUpToTheBound) {
  HealthTrackerOptions o;
  o.quiet_period = absl::Minutes(1);
  o.max_quiet_period = absl::Minutes(5);
  o.flap_window = absl::Minutes(30);
  Make(XidPolicy(), o);
  absl::Time t = t0_;
  const absl::Duration want[] = {absl::Minutes(1), absl::Minutes(2),
                                 absl::Minutes(4), absl::Minutes(5),
                                 absl::Minutes(5)};
  const char* reasons[] = {"held unhealthy for 1m",
                           "held unhealthy for 2m: 2nd failure in 30m",
                           "held unhealthy for 4m: 3rd failure in 30m",
                           "held unhealthy for 5m: 4th failure in 30m",
                           "held unhealthy for 5m: 5th failure in 30m"};
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    tracker_->OnEvent(kGpu0, Xid(94), t);
    EXPECT_THAT(Reason(Whole(kGpu0)), HasSubstr(reasons[i]));
    EXPECT_EQ(tracker_->NextProbe(), t + want[i]);
    t += want[i];
    tracker_->OnProbe({kGpu0}, ProbeResult::kPass, "", t);
    ASSERT_TRUE(Healthy(Whole(kGpu0)));
    t += absl::Seconds(1);
  }
  // Once the window holds no failure, the quiet period is back to the base.
  t += absl::Minutes(31);
  tracker_->OnEvent(kGpu0, Xid(94), t);
  EXPECT_EQ(tracker_->NextProbe(), t + absl::Minutes(1));
  EXPECT_THAT(Reason(Whole(kGpu0)), Not(HasSubstr("failure in")));
}

TEST_F(TrackerTest, LostAgainSoonAfterAResetIsHeld) {
  tracker_->OnGpuLost(kGpu0, "GPU is lost", t0_);
  tracker_->OnGpuAnswers(kGpu0, t0_ + absl::Minutes(1));
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  tracker_->OnGpuLost(kGpu0, "GPU is lost", t0_ + absl::Minutes(2));
  tracker_->OnGpuAnswers(kGpu0, t0_ + absl::Minutes(3));
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_THAT(Reason(Whole(kGpu0)),
              HasSubstr("after its 2nd failure in 10m; held unhealthy for 2m"));
  EXPECT_EQ(tracker_->NextProbe(), t0_ + absl::Minutes(5));
  tracker_->OnProbe({kGpu0}, ProbeResult::kPass, "", t0_ + absl::Minutes(5));
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
}

TEST_F(TrackerTest, NvmlFailureMakesEveryDeviceUnhealthyUntilItWorks) {
  tracker_->OnEvent(kGpu1, Xid(79), t0_);
  tracker_->OnNvmlFailure("NVML event wait failed: Unknown Error", t0_);
  tracker_->OnNvmlFailure("NVML failed: again", t0_);  // logged once
  EXPECT_TRUE(tracker_->nvml_failed());
  EXPECT_EQ(changes_, 2);
  for (const Device& d : {Whole(kGpu0), Mig(kGpu0, 9, 0), Whole(kGpu1),
                          Whole(GpuRef{"GPU-never-seen", 5})}) {
    EXPECT_FALSE(Healthy(d)) << d.id;
    EXPECT_EQ(Reason(d), "NVML event wait failed: Unknown Error");
  }
  tracker_->OnNvmlWorks(t0_ + absl::Seconds(5));
  tracker_->OnNvmlWorks(t0_ + absl::Seconds(6));
  EXPECT_EQ(changes_, 3);
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  EXPECT_FALSE(Healthy(Whole(kGpu1)));  // its own failure stays
}

TEST_F(TrackerTest, PolicyFromTheEnvironmentApplies) {
  Make(XidPolicy::FromEnvironment("79", "13"), {});
  tracker_->OnEvent(kGpu0, Xid(79), t0_);
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  tracker_->OnEvent(kGpu0, Xid(13), t0_);
  EXPECT_FALSE(Healthy(Whole(kGpu0)));
  EXPECT_THAT(Reason(Whole(kGpu0)),
              HasSubstr("XID 13 (DP_ENABLE_HEALTHCHECKS; "));
}

TEST_F(TrackerTest, GpuRefsFromDiscovery) {
  NodeGpus node;
  node.gpus.resize(2);
  node.gpus[0].uuid = "GPU-x";
  node.gpus[0].index = 0;
  node.gpus[1].uuid = "GPU-y";
  node.gpus[1].index = 3;
  std::vector<GpuRef> refs = GpuRefs(node);
  ASSERT_THAT(refs, SizeIs(2));
  EXPECT_EQ(refs[1].uuid, "GPU-y");
  EXPECT_EQ(refs[1].index, 3u);
}

TEST_F(TrackerTest, ApplyHealthPublishesOneUpdatePerChange) {
  DeviceSet set(
      {Whole(kGpu0, 0), Whole(kGpu0, 1), Whole(kGpu1, 0), Whole(kGpu1, 1)});
  int notified = 0;
  set.Subscribe([&] { ++notified; });
  EXPECT_FALSE(ApplyHealth(*tracker_, set));
  tracker_->OnEvent(kGpu0, Xid(79), t0_);
  EXPECT_TRUE(ApplyHealth(*tracker_, set));
  EXPECT_EQ(notified, 1);
  auto list = set.Get();
  EXPECT_EQ(list->Find(kGpu0.uuid + "::0")->health, Health::kUnhealthy);
  EXPECT_EQ(list->Find(kGpu0.uuid + "::1")->health, Health::kUnhealthy);
  EXPECT_THAT(list->Find(kGpu0.uuid + "::1")->unhealthy_reason,
              HasSubstr("XID 79"));
  EXPECT_EQ(list->Find(kGpu1.uuid + "::0")->health, Health::kHealthy);
  EXPECT_FALSE(ApplyHealth(*tracker_, set));
  EXPECT_EQ(notified, 1);
  tracker_->OnReset(kGpu0, "test", t0_ + absl::Hours(1));
  EXPECT_TRUE(ApplyHealth(*tracker_, set));
  EXPECT_EQ(set.Get()->Find(kGpu0.uuid + "::0")->unhealthy_reason, "");
}

TEST_F(TrackerTest, NeedsResetConditionKeepsItsReasonUntilAReset) {
  tracker_->OnNeedsReset(kGpu0, "row remapping failed",
                         "until the GPU is replaced or the node reboots",
                         {HealthCause::Kind::kEcc, 0}, t0_);
  EXPECT_EQ(Reason(Whole(kGpu0)),
            "row remapping failed; unhealthy until the GPU is replaced or the "
            "node reboots");
  EXPECT_EQ(tracker_->HealthOf(Mig(kGpu0, 1, 0)).cause.kind,
            HealthCause::Kind::kEcc);
  EXPECT_TRUE(Healthy(Whole(kGpu1)));
  // A second condition while it needs a reset: the first reason stays.
  tracker_->OnNeedsReset(kGpu0, "row remapping pending", "",
                         {HealthCause::Kind::kEcc, 0}, t0_);
  EXPECT_THAT(Reason(Whole(kGpu0)), HasSubstr("row remapping failed"));
  EXPECT_EQ(changes_, 1);
  tracker_->OnReset(kGpu0, "row remapping is no longer pending", t0_);
  EXPECT_TRUE(Healthy(Whole(kGpu0)));
  tracker_->OnNeedsReset(kGpu1, "retired pages pending", "",
                         {HealthCause::Kind::kEcc, 0}, t0_);
  EXPECT_EQ(Reason(Whole(kGpu1)),
            "retired pages pending; unhealthy until the GPU is reset");
}

}  // namespace
}  // namespace gdp
