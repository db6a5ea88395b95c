// End to end: the config file (precedence, refusals, reload on change and
// SIGHUP) and the MIG strategies, through `dpctl kubelet`.
#include <signal.h>

#include <set>

#include "tests/integration/e2e_fixture.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

class ConfigTest : public E2ETest {
 protected:
  // Runs the plugin to its exit; returns the exit code and its stderr.
  std::pair<int, std::string> RunToExit(std::vector<std::string> args,
                                        const std::string& machine = "dgx-a100",
                                        std::vector<std::string> unset = {}) {
    StartPlugin(std::move(args), machine, std::move(unset));
    int code = plugin_->Wait(kTimeout).value_or(-1);
    return {code, plugin_->Stderr()};
  }
};

std::string Replicas(int n) {
  return "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
         "    - name: nvidia.com/gpu\n      replicas: " +
         std::to_string(n) + "\n";
}

TEST_F(ConfigTest, FlagBeatsFileBeatsDefault) {
  std::string config = WriteConfig(
      "version: v1\nflags:\n  plugin:\n    deviceIDStrategy: index\n");
  json devices = StartAndList({"--config-file", config});
  EXPECT_EQ(devices["devices"][0]["id"], "0") << "file beats default";
  plugin_.reset();
  kubelet_.reset();

  devices =
      StartAndList({"--config-file", config, "--device-id-strategy", "uuid"});
  EXPECT_THAT(devices["devices"][0]["id"].get<std::string>(),
              StartsWith("GPU-"))
      << "flag beats file";
}

TEST_F(ConfigTest, BadConfigRefusesToStartNamingFieldAndLine) {
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"version: v2\n", "version"},
      {"version: v1\nflags:\n  migStrategy: sometimes\n", "migStrategy"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
       "    - name: nvidia.com/gpu\n      replicas: 1\n",
       "replicas"},
      {"version: v1\nflags:\n  plugin:\n    passDeviceSpec: true\n",
       "passDeviceSpec"},
  };
  for (const Case& c : cases) {
    auto [code, err] = RunToExit({"--config-file", WriteConfig(c.text)});
    EXPECT_NE(code, 0) << c.text;
    EXPECT_THAT(err, HasSubstr("config.yaml:")) << err;
    EXPECT_THAT(err, HasSubstr(c.message)) << err;
  }
}

TEST_F(ConfigTest, ReloadOnFileChangeAndKeepsRunningConfigOnBadFile) {
  std::string config = WriteConfig(Replicas(2));
  json devices = StartAndList({"--config-file", config});
  ASSERT_THAT(devices["devices"], SizeIs(16));

  // A good change: the resource is served again with 4 replicas per GPU.
  WriteConfig(Replicas(4));
  json changed = NextEventWhere(*kubelet_, [](const json& e) {
    return e.value("event", "") == "devices" && e.value("total", 0) == 32;
  });
  ASSERT_FALSE(changed.is_null()) << plugin_->Stderr();

  // A bad change is refused; the running config stays and keeps serving.
  WriteConfig("version: v1\nsharing:\n  timeSlicing:\n    resources: 3\n");
  for (int i = 0;
       i < 100 && plugin_->Stderr().find("reload refused") == std::string::npos;
       ++i) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("reload refused"));
  json a = AllocateFor("nvidia.com/gpu", 1, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  EXPECT_THAT(a["devices"][0].get<std::string>(), HasSubstr("::"));
}

TEST_F(ConfigTest, SighupReloadsOnlyChangedResources) {
  // MIG mixed: nvidia.com/gpu (the non-MIG GPU) and one resource per
  // profile. Sharing one MIG profile must not restart nvidia.com/gpu.
  std::string root = (dir_ / "root").string();
  MakeRoot("h100-mig");
  std::string config =
      WriteConfig("version: v1\nflags:\n  migStrategy: mixed\n");
  StartKubelet();
  StartPlugin({"--config-file", config, "--proc-root", root + "/proc"},
              "h100-mig");
  std::set<std::string> registered;
  json last = NextEventWhere(*kubelet_, [&](const json& e) {
    if (e.value("event", "") == "register" && e.value("ok", false)) {
      registered.insert(e.value("resource", ""));
    }
    return registered.size() == 4;
  });
  ASSERT_FALSE(last.is_null()) << plugin_->Stderr();

  std::ofstream(config) << "version: v1\nflags:\n  migStrategy: mixed\n"
                           "sharing:\n  timeSlicing:\n    resources:\n"
                           "    - name: nvidia.com/mig-1g.10gb\n"
                           "      replicas: 3\n";
  plugin_->Signal(SIGHUP);
  json reg = NextEventFor("nvidia.com/mig-1g.10gb", "register");
  ASSERT_TRUE(reg.value("ok", false)) << plugin_->Stderr();
  json shared = NextEventFor("nvidia.com/mig-1g.10gb", "devices");
  EXPECT_THAT(shared["devices"], SizeIs(6));
  EXPECT_THAT(plugin_->Stderr(),
              ::testing::Not(HasSubstr("Restarting nvidia.com/gpu")));
  EXPECT_THAT(plugin_->Stderr(),
              ::testing::Not(HasSubstr("Restarting nvidia.com/mig-3g.40gb")));
}

TEST_F(ConfigTest, MigMixedServesOneResourcePerProfileWithCapsNodes) {
  std::string root = (dir_ / "root").string();
  MakeRoot("h100-mig");
  json devices = StartAndList({"--mig-strategy", "mixed", "--pass-device-specs",
                               "--proc-root", root + "/proc"},
                              "nvidia.com/mig-3g.40gb", "h100-mig");
  ASSERT_THAT(devices["devices"], SizeIs(1));
  std::string id = devices["devices"][0]["id"];
  EXPECT_THAT(id, StartsWith("MIG-"));
  json a = AllocateFor("nvidia.com/mig-3g.40gb", 1, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  EXPECT_EQ(a["response"]["envs"]["NVIDIA_VISIBLE_DEVICES"], id);
  int caps = 0;
  for (const json& d : a["response"]["devices"]) {
    std::string path = d["container_path"];
    if (path.rfind("/dev/nvidia-caps/nvidia-cap", 0) == 0) {
      ++caps;
      EXPECT_TRUE(fs::exists(root + path)) << path;
    }
  }
  EXPECT_EQ(caps, 2) << a.dump();
}

TEST_F(ConfigTest, MigSingleRefusesMixedNode) {
  MakeRoot("h100-mig");
  auto [code, err] = RunToExit({"--mig-strategy", "single", "--proc-root",
                                (dir_ / "root" / "proc").string()},
                               "h100-mig");
  EXPECT_EQ(code, 1);
  EXPECT_THAT(err, HasSubstr("MIG strategy single"));
}

TEST_F(ConfigTest, MigSingleAdvertisesMigDevicesAsGpus) {
  MakeRoot("hgx-h100-mig7");
  json devices =
      StartAndList({"--mig-strategy", "single", "--device-id-strategy", "index",
                    "--proc-root", (dir_ / "root" / "proc").string()},
                   "nvidia.com/gpu", "hgx-h100-mig7");
  ASSERT_THAT(devices["devices"], SizeIs(56)) << plugin_->Stderr();
  EXPECT_EQ(devices["devices"][0]["id"], "0:0");
  EXPECT_EQ(devices["devices"][55]["id"], "7:6");
  json a = AllocateFor("nvidia.com/gpu", 2, "p1");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  EXPECT_THAT(
      a["response"]["envs"]["NVIDIA_VISIBLE_DEVICES"].get<std::string>(),
      ::testing::MatchesRegex("[0-7]:[0-6],[0-7]:[0-6]"));
}

TEST_F(ConfigTest, MigIndexIds) {
  MakeRoot("h100-mig");
  json devices =
      StartAndList({"--mig-strategy", "mixed", "--device-id-strategy", "index",
                    "--proc-root", (dir_ / "root" / "proc").string()},
                   "nvidia.com/mig-1g.10gb", "h100-mig");
  ASSERT_THAT(devices["devices"], SizeIs(2));
  EXPECT_THAT(devices["devices"][0]["id"].get<std::string>(), StartsWith("0:"));
}

}  // namespace
}  // namespace gdp
