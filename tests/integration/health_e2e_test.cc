// End to end: GPU health. Faults are injected through the fake NVML's
// control file; each test asserts what the kubelet emulator sees and when.
#include <set>

#include "tests/integration/e2e_fixture.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

// Fast health timings so recovery fits in a test.
const std::vector<std::string> kFast = {"--health-quiet-period=1s",
                                        "--health-probe-interval=100ms"};

std::vector<std::string> Args(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = kFast;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

class HealthTest : public E2ETest {
 protected:
  // The next device list of `resource` with `healthy` healthy devices.
  json WaitHealthy(int healthy, const std::string& resource = "nvidia.com/gpu",
                   absl::Duration timeout = kTimeout) {
    return NextEventWhere(
        *kubelet_,
        [&](const json& e) {
          return e.value("event", "") == "devices" &&
                 e.value("resource", "") == resource &&
                 e.value("healthy", -1) == healthy;
        },
        timeout);
  }

  // IDs of the unhealthy devices in a devices event.
  static std::set<std::string> Unhealthy(const json& devices) {
    std::set<std::string> out;
    for (const json& d : devices["devices"]) {
      if (d["health"] != "Healthy") out.insert(d["id"]);
    }
    return out;
  }

  std::vector<std::string> ids_;  // the first list's IDs, by GPU index
  json Start(std::vector<std::string> args = Args(),
             const std::string& machine = "dgx-a100") {
    json devices = StartAndList(std::move(args), "nvidia.com/gpu", machine);
    for (const json& d : devices["devices"]) ids_.push_back(d["id"]);
    return devices;
  }
};

TEST_F(HealthTest, IgnoredXidsChangeNothingNeedsResetXidMarksOneGpu) {
  Start();
  Control("xid 0 13");      // ignored by default (application error)
  Control("xid 1 31");      // ignored by default
  Control("ecc 3 single");  // logged only
  absl::Time sent = absl::Now();
  Control("xid 2 48");  // double-bit ECC: needs a reset
  json seen = WaitHealthy(7);
  ASSERT_FALSE(seen.is_null()) << plugin_->Stderr();
  EXPECT_LT(absl::Now() - sent, absl::Seconds(1));
  EXPECT_EQ(Unhealthy(seen), std::set<std::string>{ids_[2]});
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("XID 48"));

  // Needs-reset: still unhealthy well after the quiet period.
  EXPECT_TRUE(WaitHealthy(8, "nvidia.com/gpu", absl::Seconds(2)).is_null());
  // A reset (the GPU drops off the bus and comes back) clears it.
  Control("lose 2");
  absl::SleepFor(absl::Milliseconds(300));
  Control("restore 2");
  ASSERT_FALSE(WaitHealthy(8).is_null()) << plugin_->Stderr();
}

// The kubelet sees only "Unhealthy"; `dpctl list` on the plugin's socket
// also shows why (our DeviceStatus service), for exactly that device.
TEST_F(HealthTest, DpctlListShowsTheReason) {
  Start();
  Control("xid 2 48");
  ASSERT_FALSE(WaitHealthy(7).is_null()) << plugin_->Stderr();

  Subprocess dpctl(
      {.argv = {GDP_DPCTL_BIN, "list", "--socket", PluginSocket(), "--json"},
       .stderr_path = (dir_ / "dpctl.err").string()});
  json devices = NextEvent(dpctl, "devices");
  ASSERT_EQ(dpctl.Wait(kTimeout), 0) << dpctl.Stderr();
  ASSERT_FALSE(devices.is_null()) << dpctl.Stderr();
  EXPECT_EQ(dpctl.Stderr(), "");
  ASSERT_THAT(devices["devices"], SizeIs(8));
  for (const json& d : devices["devices"]) {
    SCOPED_TRACE(d.dump());
    ASSERT_TRUE(d.contains("reason"));
    if (d["id"] == ids_[2]) {
      EXPECT_EQ(d["health"], "Unhealthy");
      EXPECT_THAT(d["reason"].get<std::string>(), HasSubstr("XID 48"));
    } else {
      EXPECT_EQ(d["health"], "Healthy");
      EXPECT_EQ(d["reason"], "");
    }
  }
}

TEST_F(HealthTest, RecoverableXidComesBackAfterTheQuietPeriod) {
  Start();
  absl::Time sent = absl::Now();
  Control("xid 4 32");  // PBDMA error: recoverable
  ASSERT_FALSE(WaitHealthy(7).is_null()) << plugin_->Stderr();
  json back = WaitHealthy(8);
  ASSERT_FALSE(back.is_null()) << plugin_->Stderr();
  EXPECT_GE(absl::Now() - sent, absl::Seconds(1)) << "quiet period kept";
}

TEST_F(HealthTest, FlappingGpuIsHeldLongerEachTime) {
  Start();
  Control("xid 5 32");
  ASSERT_FALSE(WaitHealthy(7).is_null());
  ASSERT_FALSE(WaitHealthy(8).is_null());
  absl::Time second = absl::Now();
  Control("xid 5 32");
  ASSERT_FALSE(WaitHealthy(7).is_null());
  ASSERT_FALSE(WaitHealthy(8).is_null());
  EXPECT_GE(absl::Now() - second, absl::Seconds(2)) << "quiet period doubled";
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("2nd failure"));
}

TEST_F(HealthTest, LostGpuIsUnhealthyUntilRestored) {
  Start();
  Control("lose 6");
  json lost = WaitHealthy(7);
  ASSERT_FALSE(lost.is_null()) << plugin_->Stderr();
  EXPECT_EQ(Unhealthy(lost), std::set<std::string>{ids_[6]});
  // The list above comes from the XID 79 the fake NVML queues first (the
  // GPU is lost from then on); wait until a sweep found it lost too.
  const absl::Time limit = absl::Now() + kTimeout;
  while (plugin_->Stderr().find("GPU is lost") == std::string::npos &&
         absl::Now() < limit) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  Control("restore 6");
  ASSERT_FALSE(WaitHealthy(8).is_null()) << plugin_->Stderr();
}

// A GPU that falls off the bus and is back before the next sweep was never
// seen lost; its XID 79 says it fell off the bus, so it answering NVML again
// is its reset.
TEST_F(HealthTest, LoseAndRestoreBetweenSweepsIsAReset) {
  Start();
  Control("lose 2");
  Control("restore 2");
  json lost = WaitHealthy(7);
  ASSERT_FALSE(lost.is_null()) << plugin_->Stderr();
  EXPECT_EQ(Unhealthy(lost), std::set<std::string>{ids_[2]});
  ASSERT_FALSE(WaitHealthy(8).is_null()) << plugin_->Stderr();
}

// `nvidia-smi -r` after an XID that needs a reset: the GPU is never lost,
// but NVML's recovery action goes from GPU_RESET back to NONE (R565 and
// later). A GPU that still asks for a reset stays unhealthy.
TEST_F(HealthTest, ResetSeenInTheRecoveryActionMakesTheGpuHealthy) {
  Start(Args(), MachineWithDriver("dgx-a100", "570.124.06"));
  Control("xid 2 46");  // GPU timeout: catalogue RESET_GPU
  Control("xid 3 62");  // PMU halt: likewise
  ASSERT_FALSE(WaitHealthy(6).is_null()) << plugin_->Stderr();
  Control("reset 2");
  json back = WaitHealthy(7);
  ASSERT_FALSE(back.is_null()) << plugin_->Stderr();
  EXPECT_EQ(Unhealthy(back), std::set<std::string>{ids_[3]});
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("recovery action went from"));
  EXPECT_TRUE(WaitHealthy(8, "nvidia.com/gpu", absl::Seconds(1)).is_null());
}

// Without the recovery action field (R550), an uncorrectable ECC error's
// volatile count restarting at 0 shows the reset.
TEST_F(HealthTest, ResetSeenInTheVolatileEccCountsMakesTheGpuHealthy) {
  Start();
  Control("ecc 4 double");
  ASSERT_FALSE(WaitHealthy(7).is_null()) << plugin_->Stderr();
  Control("reset 4");
  ASSERT_FALSE(WaitHealthy(8).is_null()) << plugin_->Stderr();
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("volatile ECC error counts"));
}

// A 1.31+ kubelet (KEP-4680, ResourceHealthStatus) shows an allocated
// device's health in the pod's allocatedResourcesStatus by its ID: an
// unhealthy device stays listed under the same ID, whatever went wrong.
TEST_F(HealthTest, UnhealthyDevicesStayListedUnderTheirIds) {
  Start();
  const std::set<std::string> all(ids_.begin(), ids_.end());
  auto ids = [](const json& devices) {
    std::set<std::string> out;
    for (const json& d : devices["devices"]) out.insert(d["id"]);
    return out;
  };
  Control("xid 1 48");  // needs a reset
  json one = WaitHealthy(7);
  ASSERT_FALSE(one.is_null()) << plugin_->Stderr();
  EXPECT_EQ(ids(one), all);
  EXPECT_EQ(Unhealthy(one), std::set<std::string>{ids_[1]});
  Control("lose 4");  // lost
  json two = WaitHealthy(6);
  ASSERT_FALSE(two.is_null()) << plugin_->Stderr();
  EXPECT_EQ(ids(two), all);
  EXPECT_EQ(Unhealthy(two), (std::set<std::string>{ids_[1], ids_[4]}));
  Control("fail 999");  // NVML as a whole
  json none = WaitHealthy(0);
  ASSERT_FALSE(none.is_null()) << plugin_->Stderr();
  EXPECT_EQ(ids(none), all);
}

TEST_F(HealthTest, NvmlFailingMakesEveryDeviceUnhealthyUntilItWorks) {
  Start();
  Control("fail 999");
  ASSERT_FALSE(WaitHealthy(0).is_null()) << plugin_->Stderr();
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("NVML"));
  Control("recover");
  ASSERT_FALSE(WaitHealthy(8).is_null()) << plugin_->Stderr();
}

TEST_F(HealthTest, AnEventMarksEveryReplicaOfItsGpu) {
  std::string config = WriteConfig(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 4\n");
  Start(Args({"--config-file", config}));
  Control("ecc 1 double");
  json seen = WaitHealthy(28);
  ASSERT_FALSE(seen.is_null()) << plugin_->Stderr();
  std::set<std::string> bad = Unhealthy(seen);
  ASSERT_THAT(bad, SizeIs(4));
  std::string gpu = ids_[4].substr(0, ids_[4].find("::"));  // GPU 1
  for (const std::string& id : bad) EXPECT_THAT(id, StartsWith(gpu));
}

TEST_F(HealthTest, MigEventMarksOnlyItsInstance) {
  MakeRoot("h100-mig");
  StartKubelet();
  StartPlugin(Args({"--mig-strategy", "mixed", "--proc-root",
                    (dir_ / "root" / "proc").string()}),
              "h100-mig");
  ASSERT_FALSE(
      WaitHealthy(2, "nvidia.com/mig-1g.10gb").is_null());  // registered
  // GPU instance 2 holds the 3g.40gb device.
  Control("xid 0 48 2 0");
  ASSERT_FALSE(WaitHealthy(0, "nvidia.com/mig-3g.40gb").is_null())
      << plugin_->Stderr();
  // An event naming no instance covers every MIG device of the GPU.
  Control("xid 0 48");
  ASSERT_FALSE(WaitHealthy(0, "nvidia.com/mig-1g.10gb").is_null())
      << plugin_->Stderr();
}

TEST_F(HealthTest, HealthSurvivesKubeletRestartAndConfigReload) {
  std::string config = WriteConfig("version: v1\n");
  Start(Args({"--config-file", config}));
  Control("xid 7 48");
  ASSERT_FALSE(WaitHealthy(7).is_null());

  kubelet_.reset();  // the kubelet restarts
  StartKubelet();
  json again = NextEventFor("nvidia.com/gpu", "devices");
  EXPECT_EQ(again["healthy"], 7) << again.dump();

  WriteConfig(  // the config changes: the resource is rebuilt
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 2\n");
  json rebuilt = NextEventWhere(*kubelet_, [](const json& e) {
    return e.value("event", "") == "devices" && e.value("total", 0) == 16;
  });
  ASSERT_FALSE(rebuilt.is_null()) << plugin_->Stderr();
  EXPECT_EQ(rebuilt["healthy"], 14) << rebuilt.dump();
}

TEST_F(HealthTest, DisabledHealthChecksIgnoreEvents) {
  StartKubelet();
  StartPlugin(Args({"--disable-healthchecks", "all"}));
  ASSERT_FALSE(WaitHealthy(8).is_null());
  Control("xid 0 48");
  EXPECT_TRUE(WaitHealthy(7, "nvidia.com/gpu", absl::Seconds(1)).is_null());
}

}  // namespace
}  // namespace gdp
