// End to end: the real gpu-device-plugin binary on the fake NVML, against
// the kubelet emulator (dpctl kubelet) and the plugin client (dpctl).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/time/clock.h"
#include "testing/subprocess.h"
#include "tests/integration/e2e_fixture.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::SpawnOptions;
using ::testing::StartsWith;
using testing::Subprocess;
using json = nlohmann::json;

TEST_F(E2ETest, RegistersAndListsEveryGpuWithNuma) {
  StartKubelet();
  StartPlugin();
  json devices = Registered();
  ASSERT_EQ(devices["devices"].size(), 8u) << devices.dump();
  EXPECT_EQ(devices["healthy"], 8);
  for (size_t i = 0; i < 8; ++i) {
    const json& d = devices["devices"][i];
    EXPECT_THAT(d["id"].get<std::string>(), StartsWith("GPU-"));
    EXPECT_EQ(d["health"], "Healthy");
    EXPECT_EQ(d["numa"], json::array({i < 4 ? 0 : 1})) << d.dump();
  }
}

TEST_F(E2ETest, AllocateForAPodAnswersVisibleDevicesAndSpecs) {
  StartKubelet();
  StartPlugin({"--pass-device-specs"});
  json devices = Registered();
  kubelet_->WriteLine("allocate nvidia.com/gpu 2 pod-a");
  json a = NextEvent(*kubelet_, "allocate");
  ASSERT_TRUE(a.contains("response")) << a.dump();
  std::vector<std::string> ids = a["devices"];
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(a["response"]["envs"]["NVIDIA_VISIBLE_DEVICES"],
            ids[0] + "," + ids[1]);
  std::vector<std::string> paths;
  for (const json& spec : a["response"]["devices"]) {
    paths.push_back(spec["container_path"]);
    EXPECT_EQ(spec["host_path"], (dir_ / "root").string() +
                                     spec["container_path"].get<std::string>());
    EXPECT_EQ(spec["permissions"], "rw");
  }
  EXPECT_THAT(paths, ::testing::IsSupersetOf(
                         {"/dev/nvidiactl", "/dev/nvidia-uvm",
                          "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}));
  EXPECT_EQ(paths.size(), 6u);

  // The emulator keeps the devices taken: the next pod gets other GPUs.
  kubelet_->WriteLine("allocate nvidia.com/gpu 2 pod-b");
  json b = NextEvent(*kubelet_, "allocate");
  for (const json& id : b["devices"]) {
    EXPECT_THAT(ids, ::testing::Not(::testing::Contains(id)));
  }
}

TEST_F(E2ETest, IndexStrategyNamesDevicesByIndex) {
  StartKubelet();
  StartPlugin({"--device-id-strategy=index"});
  json devices = Registered();
  ASSERT_EQ(devices["devices"].size(), 8u);
  EXPECT_EQ(devices["devices"][0]["id"], "0");
  auto [code, out] = DpctlAllocate({"3", "5"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("\"NVIDIA_VISIBLE_DEVICES\":\"3,5\""));
}

TEST_F(E2ETest, BadRequestsAreRefusedAndServingGoesOn) {
  StartKubelet();
  StartPlugin();
  json devices = Registered();
  std::string good = devices["devices"][0]["id"];
  struct Case {
    std::vector<std::string> ids;
    const char* message;
  } cases[] = {
      {{"GPU-does-not-exist"}, "unknown device ID 'GPU-does-not-exist'"},
      {{good, good}, "is requested more than once"},
      {{"--container", ""}, "names no devices"},
  };
  for (const Case& c : cases) {
    auto [code, out] = DpctlAllocate(c.ids);
    EXPECT_EQ(code, 2) << out;
    EXPECT_THAT(out, HasSubstr("INVALID_ARGUMENT")) << out;
    EXPECT_THAT(out, HasSubstr(c.message)) << out;
  }
  auto [code, out] = DpctlAllocate({good});
  EXPECT_EQ(code, 0) << out;
  EXPECT_THAT(out, HasSubstr(good));
}

TEST_F(E2ETest, VerbosityOneLogsEachRpc) {
  StartKubelet();
  StartPlugin({"-v", "1"});
  Registered();
  kubelet_->WriteLine("allocate nvidia.com/gpu 2 pod-a");
  json a = NextEvent(*kubelet_, "allocate");
  ASSERT_TRUE(a.contains("devices")) << a.dump();
  const std::string ids = a["devices"][0].get<std::string>() + "," +
                          a["devices"][1].get<std::string>();
  // The kubelet takes the options from the registration; dpctl list asks.
  Subprocess list({.argv = {GDP_DPCTL_BIN, "list", "--socket", PluginSocket()},
                   .stderr_path = (dir_ / "dpctl.err").string()});
  while (list.ReadLine(kTimeout)) {
  }
  ASSERT_EQ(list.Wait(kTimeout), 0) << list.Stderr();
  const std::string log = plugin_->Stderr();
  EXPECT_THAT(log, HasSubstr("GetDevicePluginOptions: "));
  EXPECT_THAT(log, HasSubstr("ListAndWatch stream opened"));
  EXPECT_THAT(log, HasSubstr("GetPreferredAllocation: container request 0: 2 "
                             "of ["));
  EXPECT_THAT(log, HasSubstr("]): [" + ids + "]"));
  // IDs from a request are logged quoted (util/quote.h).
  const std::string quoted = "['" + a["devices"][0].get<std::string>() +
                             "', '" + a["devices"][1].get<std::string>() + "']";
  EXPECT_THAT(log,
              HasSubstr("Allocate: container request 0: devices " + quoted));
}

TEST_F(E2ETest, ReRegistersAfterKubeletRestart) {
  StartKubelet();
  StartPlugin();
  Registered();
  kubelet_->Signal(SIGTERM);
  ASSERT_EQ(kubelet_->Wait(kTimeout), 0);
  StartKubelet();  // wipes the directory's sockets, creates kubelet.sock
  json devices = Registered();
  EXPECT_EQ(devices["devices"].size(), 8u);
  EXPECT_TRUE(fs::is_socket(PluginSocket()));
}

TEST_F(E2ETest, WaitsForKubeletAbsentAtStart) {
  StartPlugin();
  for (int i = 0; i < 200 && !fs::is_socket(PluginSocket()); ++i) {
    usleep(10000);
  }
  ASSERT_TRUE(fs::is_socket(PluginSocket())) << plugin_->Stderr();
  StartKubelet();
  json devices = Registered();
  EXPECT_EQ(devices["devices"].size(), 8u);
}

TEST_F(E2ETest, SigtermStopsWithinOneSecondAndRemovesSocket) {
  StartKubelet();
  StartPlugin();
  Registered();
  absl::Time start = absl::Now();
  plugin_->Signal(SIGTERM);
  EXPECT_EQ(plugin_->Wait(absl::Seconds(1)), 0) << plugin_->Stderr();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_FALSE(fs::exists(PluginSocket()));
  json closed = NextEvent(*kubelet_, "stream_closed");
  EXPECT_FALSE(closed.is_null());
  json devices = NextEvent(*kubelet_, "devices");
  EXPECT_EQ(devices["healthy"], 0);
}

TEST_F(E2ETest, MissingNvmlExitsWithClearError) {
  std::vector<std::string> argv = {GDP_PLUGIN_BIN, "--kubelet-socket",
                                   KubeletSocket()};
  Subprocess p({.argv = argv,
                .unset_env = {"LD_LIBRARY_PATH"},
                .stderr_path = (dir_ / "p.err").string()});
  EXPECT_EQ(p.Wait(kTimeout), 1);
  EXPECT_THAT(p.Stderr(), HasSubstr("libnvidia-ml.so.1"));
  EXPECT_THAT(p.Stderr(), HasSubstr("--fail-on-init-error=false"));
}

TEST_F(E2ETest, MissingNvmlWithoutFailOnInitErrorStaysUpUnregistered) {
  StartKubelet();
  Subprocess p({.argv = {GDP_PLUGIN_BIN, "--kubelet-socket", KubeletSocket(),
                         "--fail-on-init-error=false"},
                .unset_env = {"LD_LIBRARY_PATH"},
                .stderr_path = (dir_ / "p.err").string()});
  EXPECT_TRUE(NextEvent(*kubelet_, "register", absl::Seconds(1)).is_null());
  EXPECT_FALSE(p.Wait(absl::ZeroDuration()).has_value());  // still running
  EXPECT_THAT(p.Stderr(), HasSubstr("retrying in 30s"));
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(absl::Seconds(1)), 0);
}

TEST_F(E2ETest, DriverInstalledLaterIsPickedUp) {
  StartKubelet();
  fs::path driver = dir_ / "driver";
  fs::create_directories(driver / "usr/lib64");
  StartPlugin({"--driver-root", driver.string(), "--fail-on-init-error=false",
               "--nvml-retry-interval=1"});
  EXPECT_TRUE(
      NextEvent(*kubelet_, "register", absl::Milliseconds(300)).is_null());
  // The driver arrives: NVML becomes loadable under the driver root.
  fs::create_symlink(GDP_FAKE_NVML_LIB, driver / "usr/lib64/libnvidia-ml.so.1");
  json devices = Registered();
  EXPECT_EQ(devices["devices"].size(), 8u) << plugin_->Stderr();
}

TEST_F(E2ETest, BadMachineFileFailsInitClearly) {
  fs::path bad = dir_ / "bad.yaml";
  std::ofstream(bad) << "gpus:\n  - name: [unclosed\n";
  Subprocess p({.argv = {GDP_PLUGIN_BIN, "--kubelet-socket", KubeletSocket()},
                .env = {{"LD_LIBRARY_PATH", GDP_FAKE_NVML_LIBDIR},
                        {"FAKE_NVML_MACHINE", bad.string()}},
                .stderr_path = (dir_ / "p.err").string()});
  EXPECT_EQ(p.Wait(kTimeout), 1);
  EXPECT_THAT(p.Stderr(), HasSubstr("nvmlInit_v2"));
  EXPECT_THAT(p.Stderr(), HasSubstr(bad.string()));  // the fake names the file
}

TEST_F(E2ETest, DiscoverPrintsWhatNvmlReports) {
  Subprocess p({.argv = {GDP_PLUGIN_BIN, "--sysfs-root",
                         (dir_ / "root" / "sys").string(), "discover"},
                .env = {{"LD_LIBRARY_PATH", GDP_FAKE_NVML_LIBDIR},
                        {"FAKE_NVML_MACHINE", Machine("pcie-t4")}},
                .stderr_path = (dir_ / "p.err").string()});
  std::string out;
  while (auto line = p.ReadLine(kTimeout)) out += *line;
  ASSERT_EQ(p.Wait(kTimeout), 0) << p.Stderr();
  json j = json::parse(out);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["name"], "Tesla T4");
  EXPECT_EQ(j["gpus"][0]["compute_capability"], "7.5");
  EXPECT_FALSE(j["gpus"][0]["mig_capable"]);
  // The rootfs was made for dgx-a100, so the T4's bus ids have no NUMA file.
  EXPECT_EQ(j["gpus"][0]["numa_node"], -1);
}

}  // namespace
}  // namespace gdp
