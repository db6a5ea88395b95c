// End to end: health that survives restarts. The plugin keeps a GPU that
// needs a reset in its state file (--state-dir) and says so again after a
// SIGKILL; a new boot ID, `health-state clear` + SIGHUP, or a bad file
// each make it start from healthy.
#include <signal.h>

#include <set>

#include "tests/integration/e2e_fixture.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class HealthStateTest : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    SetBootId("boot-1");
  }

  // The boot ID the plugin reads (--proc-root points at the fixture).
  void SetBootId(const std::string& id) {
    fs::create_directories(dir_ / "root/proc/sys/kernel/random");
    std::ofstream(dir_ / "root/proc/sys/kernel/random/boot_id") << id << "\n";
  }

  std::vector<std::string> Args() {
    return {"--health-quiet-period=1s", "--health-probe-interval=100ms",
            "--proc-root", (dir_ / "root" / "proc").string()};
  }

  fs::path StateFile() { return fs::path(StateDir()) / "health-state.json"; }

  std::string StateText() {
    std::ifstream in(StateFile());
    return std::string((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
  }

  // Waits until the state file holds `text` (or no longer, with `absent`).
  bool WaitForState(const std::string& text, bool absent = false) {
    const absl::Time deadline = absl::Now() + kTimeout;
    while (absl::Now() < deadline) {
      const bool has = StateText().find(text) != std::string::npos;
      if (has != absent) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  // The next device list of nvidia.com/gpu with `healthy` healthy devices.
  json WaitHealthy(int healthy, absl::Duration timeout = kTimeout) {
    return NextEventWhere(
        *kubelet_,
        [&](const json& e) {
          return e.value("event", "") == "devices" &&
                 e.value("resource", "") == "nvidia.com/gpu" &&
                 e.value("healthy", -1) == healthy;
        },
        timeout);
  }

  static std::set<std::string> Unhealthy(const json& devices) {
    std::set<std::string> out;
    for (const json& d : devices["devices"]) {
      if (d["health"] != "Healthy") out.insert(d["id"]);
    }
    return out;
  }

  // Starts the plugin and returns the first device list after it
  // registered.
  json StartAndListAgain(const std::string& machine = "dgx-a100") {
    StartPlugin(Args(), machine);
    json reg = NextEventFor("nvidia.com/gpu", "register");
    EXPECT_TRUE(reg.value("ok", false)) << reg.dump() << plugin_->Stderr();
    return NextEventFor("nvidia.com/gpu", "devices");
  }

  // Starts everything, makes GPU 2 need a reset, waits until the state
  // file holds it, and kills the plugin with SIGKILL (no shutdown at all).
  void BreakGpu2AndKill() {
    StartKubelet();
    json first = StartAndListAgain();
    for (const json& d : first["devices"]) ids_.push_back(d["id"]);
    ASSERT_EQ(ids_.size(), 8u) << first.dump();
    Control("xid 2 48");  // double-bit ECC: needs a reset
    ASSERT_FALSE(WaitHealthy(7).is_null()) << plugin_->Stderr();
    ASSERT_TRUE(WaitForState(ids_[2])) << StateText() << plugin_->Stderr();
    plugin_->Signal(SIGKILL);
    ASSERT_EQ(plugin_->Wait(kTimeout), 128 + SIGKILL);
  }

  // `gpu-device-plugin health-state ...`: exit status and stdout+stderr.
  std::pair<int, std::string> HealthStateCommand(
      std::vector<std::string> args) {
    std::vector<std::string> argv = {GDP_PLUGIN_BIN, "health-state"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--state-dir", StateDir(), "--proc-root",
                             (dir_ / "root" / "proc").string()});
    Subprocess p({.argv = argv, .stderr_path = (dir_ / "cmd.err").string()});
    std::string out = p.ReadAll(kTimeout);
    int code = p.Wait(kTimeout).value_or(-1);
    return {code, out + p.Stderr()};
  }

  std::vector<std::string> ids_;  // by GPU index
};

TEST_F(HealthStateTest, NeedsResetGpuIsUnhealthyAgainAfterSigkillUntilCleared) {
  BreakGpu2AndKill();
  if (HasFatalFailure()) return;

  // The restarted plugin's first list already has GPU 2 unhealthy.
  json again = StartAndListAgain();
  ASSERT_FALSE(again.is_null()) << plugin_->Stderr();
  EXPECT_EQ(again["healthy"], 7) << again.dump();
  EXPECT_EQ(Unhealthy(again), std::set<std::string>{ids_[2]});
  // With the saved reason, saying where it came from.
  Subprocess dpctl(
      {.argv = {GDP_DPCTL_BIN, "list", "--socket", PluginSocket(), "--json"},
       .stderr_path = (dir_ / "dpctl.err").string()});
  json listed = NextEvent(dpctl, "devices");
  ASSERT_EQ(dpctl.Wait(kTimeout), 0) << dpctl.Stderr();
  std::string reason = "(not listed)";
  for (const json& d : listed["devices"]) {
    if (d["id"] == ids_[2]) reason = d.value("reason", "");
  }
  EXPECT_THAT(reason, HasSubstr("XID 48"));
  EXPECT_THAT(reason,
              HasSubstr("restored from the state file after a plugin restart"));
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("saved state of 1 GPU(s)"));

  // `health-state show` prints it.
  auto [shown, show_out] = HealthStateCommand({"show"});
  EXPECT_EQ(shown, 0) << show_out;
  EXPECT_THAT(show_out, HasSubstr("GPU 2 " + ids_[2]));
  EXPECT_THAT(show_out, HasSubstr("needs-reset since"));
  EXPECT_THAT(show_out, HasSubstr("(this boot)"));

  // The operator reset the GPU meanwhile: clear it, and SIGHUP the plugin.
  auto [cleared, clear_out] =
      HealthStateCommand({"clear", "--gpu", ids_[2], "--signal-pid",
                          std::to_string(plugin_->pid())});
  EXPECT_EQ(cleared, 0) << clear_out;
  EXPECT_THAT(clear_out, HasSubstr("Dropped GPU 2 " + ids_[2]));
  EXPECT_THAT(clear_out, HasSubstr("Sent SIGHUP"));
  ASSERT_FALSE(WaitHealthy(8).is_null()) << plugin_->Stderr();
  EXPECT_THAT(plugin_->Stderr(),
              HasSubstr("healthy again: its saved health state was cleared"));
  EXPECT_THAT(StateText(), Not(HasSubstr(ids_[2])));

  // And it stays so across another restart.
  plugin_->Signal(SIGKILL);
  ASSERT_EQ(plugin_->Wait(kTimeout), 128 + SIGKILL);
  json after = StartAndListAgain();
  EXPECT_EQ(after["healthy"], 8) << after.dump() << plugin_->Stderr();
}

// The operator reset the GPU (nvidia-smi -r) while the plugin was down: the
// restarted plugin lists it unhealthy from its state file, reads NVML's
// recovery action back at NONE where the file says it asked for a reset,
// and makes it healthy.
TEST_F(HealthStateTest, GpuResetWhileThePluginWasDownIsHealthyAgain) {
  const std::string machine = MachineWithDriver("dgx-a100", "570.124.06");
  StartKubelet();
  json first = StartAndListAgain(machine);
  for (const json& d : first["devices"]) ids_.push_back(d["id"]);
  ASSERT_EQ(ids_.size(), 8u) << first.dump();
  Control("xid 2 46");  // GPU timeout: catalogue RESET_GPU
  ASSERT_FALSE(WaitHealthy(7).is_null()) << plugin_->Stderr();
  ASSERT_TRUE(WaitForState("\"recoveryAction\": 1"))
      << StateText() << plugin_->Stderr();
  plugin_->Signal(SIGKILL);
  ASSERT_EQ(plugin_->Wait(kTimeout), 128 + SIGKILL);

  Control("reset 2");  // while nothing watches: the GPU keeps it
  json again = StartAndListAgain(machine);
  ASSERT_FALSE(again.is_null()) << plugin_->Stderr();
  EXPECT_EQ(again["healthy"], 7) << again.dump();  // from the file
  ASSERT_FALSE(WaitHealthy(8).is_null()) << plugin_->Stderr();
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("recovery action went from"));
  // Only its failure is kept now (for the flap window).
  EXPECT_TRUE(WaitForState("needs-reset", /*absent=*/true)) << StateText();
}

// Not reset meanwhile: NVML still asks for a reset, so the restarted
// plugin keeps the GPU unhealthy.
TEST_F(HealthStateTest, GpuStillAskingForAResetStaysUnhealthyAfterRestart) {
  const std::string machine = MachineWithDriver("dgx-a100", "570.124.06");
  StartKubelet();
  json first = StartAndListAgain(machine);
  for (const json& d : first["devices"]) ids_.push_back(d["id"]);
  ASSERT_EQ(ids_.size(), 8u) << first.dump();
  Control("xid 2 46");
  Control("ecc 2 double");
  ASSERT_FALSE(WaitHealthy(7).is_null()) << plugin_->Stderr();
  ASSERT_TRUE(WaitForState("\"volatileEccDbe\": 1"))
      << StateText() << plugin_->Stderr();
  plugin_->Signal(SIGKILL);
  ASSERT_EQ(plugin_->Wait(kTimeout), 128 + SIGKILL);

  json again = StartAndListAgain(machine);
  ASSERT_FALSE(again.is_null()) << plugin_->Stderr();
  EXPECT_EQ(again["healthy"], 7) << again.dump();
  EXPECT_TRUE(WaitHealthy(8, absl::Seconds(1)).is_null()) << plugin_->Stderr();
  EXPECT_THAT(StateText(), HasSubstr(ids_[2]));
}

TEST_F(HealthStateTest, AnotherBootStartsHealthy) {
  BreakGpu2AndKill();
  if (HasFatalFailure()) return;
  SetBootId("boot-2");  // the node rebooted: every GPU was reset
  json again = StartAndListAgain();
  ASSERT_FALSE(again.is_null()) << plugin_->Stderr();
  EXPECT_EQ(again["healthy"], 8) << again.dump();
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("is from another boot"));
  // The stale file gives way to this boot's (nothing unhealthy).
  EXPECT_TRUE(WaitForState("boot-2")) << StateText();
  EXPECT_THAT(StateText(), Not(HasSubstr(ids_[2])));
}

TEST_F(HealthStateTest, CorruptStateFileIsSetAsideAndIgnored) {
  fs::create_directories(StateDir());
  std::ofstream(StateFile()) << "{\"kind\": \"gpu-device-plugin/health-st";
  StartKubelet();
  json first = StartAndListAgain();
  ASSERT_FALSE(first.is_null()) << plugin_->Stderr();
  EXPECT_EQ(first["healthy"], 8) << first.dump();
  EXPECT_THAT(plugin_->Stderr(), HasSubstr(StateFile().string()));
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("not JSON"));
  EXPECT_TRUE(fs::exists(StateFile().string() + ".corrupt"));
  // The plugin keeps working and saves again.
  Control("xid 5 48");
  ASSERT_FALSE(WaitHealthy(7).is_null()) << plugin_->Stderr();
  EXPECT_TRUE(WaitForState("needs-reset")) << StateText();
}

TEST_F(HealthStateTest, EmptyStateDirKeepsNothing) {
  StartKubelet();
  std::vector<std::string> args = Args();
  args.insert(args.end(), {"--state-dir", ""});
  StartPlugin(args);
  ASSERT_FALSE(WaitHealthy(8).is_null()) << plugin_->Stderr();
  Control("xid 2 48");
  ASSERT_FALSE(WaitHealthy(7).is_null()) << plugin_->Stderr();
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("not kept across restarts"));
  EXPECT_FALSE(fs::exists(StateDir()));
}

}  // namespace
}  // namespace gdp
