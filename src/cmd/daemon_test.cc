// The daemon in-process against the project's fake libnvidia-ml.so.1 (a
// driver root, and a sysfs and /proc made by `fake-nvml rootfs`), serving
// an in-process kubelet: config reloads (accepted, refused, unchanged),
// following a changed layout, and health from NVML reaching the plugins.
//
// The machine is h100-mig: GPU 0 has MIG enabled with devices 3g.40gb,
// 2g.20gb, 1g.10gb and 1g.10gb; GPU 1 has MIG disabled. With MIG strategy
// mixed the daemon serves nvidia.com/gpu (GPU 1) and one resource per
// profile.
#include "cmd/daemon.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "health/state_file.h"
#include "testing/eventually.h"
#include "testing/fake_kubelet.h"
#include "testing/fake_nvml_root.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using gdp::testing::Eventually;
using gdp::testing::FakeKubelet;
using ::testing::HasSubstr;

constexpr char kGpu[] = "nvidia.com/gpu";
constexpr char kMig1g[] = "nvidia.com/mig-1g.10gb";
constexpr char kMig2g[] = "nvidia.com/mig-2g.20gb";
constexpr char kMig3g[] = "nvidia.com/mig-3g.40gb";

// A resource's devices by health, as its plugin serves them.
struct Served {
  size_t healthy = 0;
  size_t unhealthy = 0;
  bool operator==(const Served&) const = default;
};

void PrintTo(const Served& s, std::ostream* os) {
  *os << "{healthy " << s.healthy << ", unhealthy " << s.unhealthy << "}";
}

class DaemonTest : public ::testing::Test {
 protected:
  DaemonTest() : fake_("daemon", GDP_FAKE_NVML_LIB) {}

  void SetUp() override {
    const std::string machine =
        std::string(GDP_MACHINES_DIR) + "/h100-mig.yaml";
    fake_.UseMachine(machine);
    const std::string tool = std::string(GDP_FAKE_NVML_TOOL) +
                             " rootfs --machine " + machine + " --out " +
                             (fake_.dir() / "host").string();
    ASSERT_EQ(std::system(tool.c_str()), 0) << tool;
    fs::create_directories(fake_.dir() / "kubelet");
    kubelet_ = std::make_unique<FakeKubelet>(fake_.dir() / "kubelet");
    auto nvml = Nvml::Open(fake_.root());
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *std::move(nvml);
    config_ = BaseConfig();
    // As main does: NVML calls under deadlines, so that stopping never
    // waits for the monitor's event wait.
    nvml_->set_call_deadline(config_.nvml_timeout);
  }

  void TearDown() override {
    daemon_.reset();
    kubelet_.reset();
    nvml_.reset();
  }

  // The config every test starts from: MIG mixed on the fixture's roots,
  // health sweeps every 100 ms.
  Config BaseConfig() const {
    Config c;
    c.kubelet_socket = (fake_.dir() / "kubelet" / "kubelet.sock").string();
    c.driver_root = fake_.root();
    c.sysfs_root = (fake_.dir() / "host" / "sys").string();
    c.proc_root = (fake_.dir() / "host" / "proc").string();
    c.cdi_spec_dir = (fake_.dir() / "cdi").string();
    c.mig_strategy = MigStrategy::kMixed;
    c.health_probe_interval = absl::Milliseconds(100);
    return c;
  }

  // BaseConfig with the 1g.10gb MIG devices time-sliced into `replicas`.
  Config SharedConfig(int replicas) const {
    Config c = BaseConfig();
    c.sharing.strategy = SharingStrategy::kTimeSlicing;
    SharedResource r;
    r.name = kMig1g;
    r.replicas = replicas;
    c.sharing.resources.push_back(r);
    return c;
  }

  // Starts a daemon with `config` (and `state`) on the GPUs as discovered
  // now, and waits until the kubelet has every resource registered.
  void StartDaemon(const Config& config, HealthStateOptions state = {}) {
    ASSERT_TRUE(Validate(config).ok()) << Validate(config);
    absl::StatusOr<NodeGpus> node = DiscoverGpus(*nvml_, config.sysfs_root);
    ASSERT_TRUE(node.ok()) << node.status();
    ASSERT_EQ(node->gpus.size(), 2u);
    node_ = *node;
    daemon_ = std::make_unique<Daemon>(*nvml_, config, std::move(state));
    ASSERT_TRUE(daemon_->Start(*std::move(node)).ok());
    // Registered on both sides: the fake kubelet counts a registration
    // when it receives it, the plugin only once the kubelet's answer is
    // back (a test checking p.registered right after raced that answer).
    ASSERT_TRUE(Eventually([&] {
      for (const PluginStatus& p : daemon_->Plugins()) {
        if (kubelet_->registered(p.resource) == 0 || !p.registered) {
          return false;
        }
      }
      return true;
    }));
  }

  // What each running resource serves.
  std::map<std::string, Served> Serving() const {
    std::map<std::string, Served> out;
    for (const PluginStatus& p : daemon_->Plugins()) {
      out[p.resource] = {p.healthy, p.unhealthy};
    }
    return out;
  }

  // How often each of the four resources registered with the kubelet.
  std::map<std::string, int> Registrations() const {
    std::map<std::string, int> out;
    for (const char* r : {kGpu, kMig1g, kMig2g, kMig3g}) {
      out[r] = kubelet_->registered(r);
    }
    return out;
  }

  testing::FakeNvmlRoot fake_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<Nvml> nvml_;
  Config config_;
  NodeGpus node_;  // what the daemon was started on
  std::unique_ptr<Daemon> daemon_;
};

const std::map<std::string, Served> kAllHealthy = {
    {kGpu, {1, 0}}, {kMig1g, {2, 0}}, {kMig2g, {1, 0}}, {kMig3g, {1, 0}}};
const std::map<std::string, int> kOnce = {
    {kGpu, 1}, {kMig1g, 1}, {kMig2g, 1}, {kMig3g, 1}};

TEST_F(DaemonTest, ReloadAppliesAChangedConfigRestartingOnlyWhatChanged) {
  StartDaemon(BaseConfig());
  ASSERT_EQ(Serving(), kAllHealthy);

  ASSERT_TRUE(daemon_->Reload(SharedConfig(3)).ok());
  EXPECT_EQ(daemon_->config().sharing, SharedConfig(3).sharing);
  std::map<std::string, Served> shared = kAllHealthy;
  shared[kMig1g] = {6, 0};
  EXPECT_EQ(Serving(), shared);
  // The changed resource registers again; the others were left running.
  ASSERT_TRUE(Eventually([&] { return kubelet_->registered(kMig1g) == 2; }));
  std::map<std::string, int> want = kOnce;
  want[kMig1g] = 2;
  EXPECT_EQ(Registrations(), want);
}

TEST_F(DaemonTest, ReloadRefusesWhatCannotBeAppliedAndKeepsTheRunningConfig) {
  StartDaemon(BaseConfig());
  Config single = BaseConfig();
  single.mig_strategy = MigStrategy::kSingle;
  Config moved = BaseConfig();
  moved.kubelet_socket = (fake_.dir() / "elsewhere.sock").string();
  struct Case {
    const char* name;
    absl::StatusOr<Config> loaded;
    const char* why;
  } cases[] = {
      {"failed to load",
       absl::InvalidArgumentError("config.yaml:3: sharing: not a map"),
       "config.yaml:3"},
      {"MIG single on a mixed node", single, "MIG strategy single"},
      {"a setting fixed until restart", moved, "kubelet socket"},
  };
  for (const Case& c : cases) {
    absl::Status s = daemon_->Reload(c.loaded);
    EXPECT_FALSE(s.ok()) << c.name;
    EXPECT_THAT(s.message(), HasSubstr(c.why)) << c.name;
    EXPECT_EQ(daemon_->config().mig_strategy, MigStrategy::kMixed) << c.name;
    EXPECT_EQ(daemon_->config().kubelet_socket, BaseConfig().kubelet_socket)
        << c.name;
    EXPECT_EQ(Serving(), kAllHealthy) << c.name;
  }
  // Nothing was restarted: every plugin is still registered from its start.
  for (const PluginStatus& p : daemon_->Plugins()) {
    EXPECT_TRUE(p.registered) << p.resource;
  }
  EXPECT_EQ(Registrations(), kOnce);
}

TEST_F(DaemonTest, ReloadOfTheSameConfigRestartsNothing) {
  StartDaemon(SharedConfig(2));
  ASSERT_TRUE(daemon_->Reload(SharedConfig(2)).ok());
  // A restarted plugin starts unregistered.
  for (const PluginStatus& p : daemon_->Plugins()) {
    EXPECT_TRUE(p.registered) << p.resource;
  }
  std::map<std::string, Served> shared = kAllHealthy;
  shared[kMig1g] = {4, 0};
  EXPECT_EQ(Serving(), shared);
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(Registrations(), kOnce);
}

TEST_F(DaemonTest, FollowServesAChangedLayoutAndNothingForTheSame) {
  StartDaemon(BaseConfig());
  absl::StatusOr<NodeGpus> found = daemon_->Discover();
  ASSERT_TRUE(found.ok()) << found.status();
  absl::StatusOr<bool> same = daemon_->Follow(*found);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_FALSE(*same);
  EXPECT_EQ(Registrations(), kOnce);

  // GPU 0's second 1g.10gb MIG device is gone, then GPU 1 is gone, then
  // both are back.
  NodeGpus one_mig_less = *found;
  ASSERT_EQ(one_mig_less.gpus[0].migs.size(), 4u);
  one_mig_less.gpus[0].migs.pop_back();
  NodeGpus no_gpu1 = one_mig_less;
  no_gpu1.gpus.pop_back();
  struct Step {
    const char* name;
    NodeGpus found;
    std::map<std::string, Served> serving;
  } steps[] = {
      {"a MIG device gone",
       one_mig_less,
       {{kGpu, {1, 0}}, {kMig1g, {1, 0}}, {kMig2g, {1, 0}}, {kMig3g, {1, 0}}}},
      {"GPU 1 gone",
       no_gpu1,
       {{kMig1g, {1, 0}}, {kMig2g, {1, 0}}, {kMig3g, {1, 0}}}},
      {"both back", *found, kAllHealthy},
  };
  for (const Step& step : steps) {
    absl::StatusOr<bool> applied = daemon_->Follow(step.found);
    ASSERT_TRUE(applied.ok()) << step.name << ": " << applied.status();
    EXPECT_TRUE(*applied) << step.name;
    EXPECT_EQ(Serving(), step.serving) << step.name;
    absl::StatusOr<bool> again = daemon_->Follow(step.found);
    ASSERT_TRUE(again.ok()) << step.name << ": " << again.status();
    EXPECT_FALSE(*again) << step.name << ": the same layout again";
  }
  // nvidia.com/mig-2g.20gb and -3g.40gb never changed.
  EXPECT_EQ(kubelet_->registered(kMig2g), 1);
  EXPECT_EQ(kubelet_->registered(kMig3g), 1);
}

TEST_F(DaemonTest, GpuBackInDiscoveryCountsAsReset) {
  StartDaemon(BaseConfig());
  ASSERT_TRUE(fake_.InjectUntil("xid 1 48", [&] {
    return Serving()[kGpu] == Served{0, 1};
  })) << "XID 48 on GPU 1 should make nvidia.com/gpu unhealthy";
  NodeGpus without = node_;
  without.gpus.pop_back();
  ASSERT_TRUE(daemon_->Follow(without).ok());
  EXPECT_EQ(Serving().count(kGpu), 0u);
  absl::StatusOr<bool> back = daemon_->Follow(node_);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back);
  EXPECT_EQ(Serving(), kAllHealthy);
}

TEST_F(DaemonTest, XidReachesThePluginsUntilItsSavedStateIsCleared) {
  const std::string dir = (fake_.dir() / "state").string();
  StartDaemon(BaseConfig(), {.dir = dir, .boot_id = "boot-1"});
  const std::string gpu1 = node_.gpus[1].uuid;
  ASSERT_TRUE(fake_.InjectUntil("xid 1 48", [&] {
    return Serving()[kGpu] == Served{0, 1};
  })) << "XID 48 on GPU 1 should make nvidia.com/gpu unhealthy";
  std::map<std::string, Served> want = kAllHealthy;
  want[kGpu] = {0, 1};
  EXPECT_EQ(Serving(), want) << "only GPU 1's devices";
  EXPECT_EQ(daemon_->NvmlFailure(), "");

  // The state file follows (once the monitor's first read of what a reset
  // changes is in, it stays); reading it again unchanged clears nothing.
  const std::string path = HealthStatePath(dir);
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<HealthState> saved = ReadHealthState(path);
    return saved.ok() && saved->gpus.contains(gpu1) &&
           saved->gpus.at(gpu1).reset_markers.has_value();
  }));
  daemon_->ReloadHealthState();
  EXPECT_EQ(Serving(), want);

  // As `gpu-device-plugin health-state clear GPU-...` does it.
  absl::StatusOr<HealthState> saved = ReadHealthState(path);
  ASSERT_TRUE(saved.ok()) << saved.status();
  saved->gpus.erase(gpu1);
  ASSERT_TRUE(WriteHealthStateText(path, SerializeHealthState(*saved)).ok());
  daemon_->ReloadHealthState();
  EXPECT_EQ(Serving(), kAllHealthy);
  absl::StatusOr<HealthState> rewritten = ReadHealthState(path);
  EXPECT_TRUE(!rewritten.ok() || !rewritten->gpus.contains(gpu1));
}

TEST_F(DaemonTest, LostGpuMakesEveryDeviceOnItUnhealthy) {
  StartDaemon(BaseConfig());
  fake_.Inject("lose 0");
  const std::map<std::string, Served> want = {
      {kGpu, {1, 0}}, {kMig1g, {0, 2}}, {kMig2g, {0, 1}}, {kMig3g, {0, 1}}};
  ASSERT_TRUE(Eventually([&] { return Serving() == want; }))
      << ::testing::PrintToString(Serving());
  EXPECT_EQ(daemon_->NvmlFailure(), "") << "one GPU is no failure of NVML";
}

// A GPU NVML cannot describe any more is left out of a discovery; a
// reload serves it as a rediscovery does: as it was, unhealthy, restarting
// nothing, until it answers again (docs/health.md, "A GPU NVML cannot
// describe").
TEST_F(DaemonTest, ReloadAndRediscoveryKeepAGpuNvmlCannotDescribe) {
  StartDaemon(BaseConfig());
  std::map<std::string, Served> lost = kAllHealthy;
  lost[kGpu] = {0, 1};
  fake_.Inject("lose 1");
  ASSERT_TRUE(Eventually([&] { return Serving() == lost; }))
      << ::testing::PrintToString(Serving());

  absl::StatusOr<NodeGpus> found = daemon_->Discover();
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->unusable.size(), 1u) << "GPU 1 is left out";
  absl::StatusOr<bool> followed = daemon_->Follow(*found);
  ASSERT_TRUE(followed.ok()) << followed.status();
  EXPECT_FALSE(*followed) << "rediscovery: nothing to change";
  EXPECT_EQ(Serving(), lost) << "after a rediscovery";

  ASSERT_TRUE(daemon_->Reload(BaseConfig()).ok());
  EXPECT_EQ(Serving(), lost) << "after a reload";
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(Registrations(), kOnce) << "nothing restarted";

  // Back on the bus (a reset): healthy again, still nothing restarted.
  fake_.Inject("restore 1");
  ASSERT_TRUE(Eventually([&] { return Serving() == kAllHealthy; }))
      << ::testing::PrintToString(Serving());
  ASSERT_TRUE(daemon_->Reload(BaseConfig()).ok());
  EXPECT_EQ(Serving(), kAllHealthy);
  EXPECT_EQ(Registrations(), kOnce);
}

TEST_F(DaemonTest, ReloadKeepsAMigDeviceNvmlCannotDescribe) {
  StartDaemon(BaseConfig());
  std::map<std::string, Served> failing = kAllHealthy;
  failing[kMig1g] = {1, 1};
  fake_.Inject("fail-mig 0 3 999");
  ASSERT_TRUE(Eventually([&] { return Serving() == failing; }))
      << ::testing::PrintToString(Serving());
  ASSERT_TRUE(daemon_->Reload(BaseConfig()).ok());
  EXPECT_EQ(Serving(), failing) << "MIG device 3 stays listed, unhealthy";
  absl::StatusOr<NodeGpus> found = daemon_->Discover();
  ASSERT_TRUE(found.ok()) << found.status();
  absl::StatusOr<bool> followed = daemon_->Follow(*found);
  ASSERT_TRUE(followed.ok()) << followed.status();
  EXPECT_FALSE(*followed);
  EXPECT_EQ(Serving(), failing);
}

TEST_F(DaemonTest, HealthChecksOffLeaveEveryDeviceHealthy) {
  Config off = BaseConfig();
  off.disable_healthchecks = "all";
  StartDaemon(off,
              {.dir = (fake_.dir() / "state").string(), .boot_id = "boot-1"});
  fake_.Inject("lose 0");
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(Serving(), kAllHealthy);
  EXPECT_FALSE(fs::exists(HealthStatePath((fake_.dir() / "state").string())));
}

}  // namespace
}  // namespace gdp
