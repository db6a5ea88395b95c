// The end-to-end fixture: a temporary root made by `fake-nvml rootfs`, the
// kubelet emulator (`dpctl kubelet --json`) and the real gpu-device-plugin
// binary on the fake NVML.
#ifndef GDP_TESTS_INTEGRATION_E2E_FIXTURE_H_
#define GDP_TESTS_INTEGRATION_E2E_FIXTURE_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace gdp {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::SpawnOptions;
using testing::Subprocess;

constexpr absl::Duration kTimeout = absl::Seconds(10);

// A shipped machine file by name ("dgx-a100"), or a path ("/tmp/m.yaml").
std::string Machine(const std::string& name) {
  if (!name.empty() && name[0] == '/') return name;
  return std::string(GDP_MACHINES_DIR) + "/" + name + ".yaml";
}

class E2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "kp");
    MakeRoot("dgx-a100");
  }
  void TearDown() override {
    plugin_.reset();
    kubelet_.reset();
  }

  void MakeRoot(const std::string& machine) {
    fs::remove_all(dir_ / "root");
    Subprocess tool(
        {.argv = {GDP_FAKE_NVML_TOOL, "rootfs", "--machine", Machine(machine),
                  "--out", (dir_ / "root").string()}});
    ASSERT_EQ(tool.Wait(kTimeout), 0);
  }

  std::string KubeletSocket() {
    return (dir_ / "kp" / "kubelet.sock").string();
  }
  std::string PluginSocket() {
    return (dir_ / "kp" / "nvidia-gpu.sock").string();
  }

  void StartKubelet() {
    kubelet_ = std::make_unique<Subprocess>(
        SpawnOptions{.argv = {GDP_DPCTL_BIN, "kubelet", "--dir",
                              (dir_ / "kp").string(), "--json"},
                     .stderr_path = (dir_ / "kubelet.err").string(),
                     .pipe_stdin = true});
    json e = NextEvent(*kubelet_, "listening");
    ASSERT_FALSE(e.is_null()) << kubelet_->Stderr();
  }

  void StartPlugin(std::vector<std::string> args = {},
                   const std::string& machine = "dgx-a100",
                   std::vector<std::string> unset = {}) {
    std::vector<std::string> argv = {GDP_PLUGIN_BIN,
                                     "--kubelet-socket",
                                     KubeletSocket(),
                                     "--sysfs-root",
                                     (dir_ / "root" / "sys").string(),
                                     "--dev-root",
                                     (dir_ / "root").string()};
    // Health state stays in the test's directory, never in the host's
    // /var/lib/gpu-device-plugin.
    if (std::none_of(args.begin(), args.end(), [](const std::string& a) {
          return a.rfind("--state-dir", 0) == 0;
        })) {
      argv.insert(argv.end(), {"--state-dir", StateDir()});
    }
    argv.insert(argv.end(), args.begin(), args.end());
    plugin_ = std::make_unique<Subprocess>(
        SpawnOptions{.argv = argv,
                     .env = {{"LD_LIBRARY_PATH", GDP_FAKE_NVML_LIBDIR},
                             {"FAKE_NVML_MACHINE", Machine(machine)},
                             {"FAKE_NVML_CONTROL", ControlFile()}},
                     .unset_env = unset,
                     .stderr_path = (dir_ / "plugin.err").string()});
  }

  // Reads JSON events from `p` until one for which `pred` holds.
  template <typename Pred>
  json NextEventWhere(Subprocess& p, Pred pred,
                      absl::Duration timeout = kTimeout) {
    absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      auto line = p.ReadLine(deadline - absl::Now());
      if (!line.has_value()) break;
      json e = json::parse(*line, nullptr, /*allow_exceptions=*/false);
      if (e.is_object() && pred(e)) return e;
    }
    return json();
  }

  // Reads JSON events from `p` until one named `event` (null on timeout).
  json NextEvent(Subprocess& p, const std::string& event,
                 absl::Duration timeout = kTimeout) {
    return NextEventWhere(
        p, [&](const json& e) { return e.value("event", "") == event; },
        timeout);
  }

  // The next event named `event` for `resource`.
  json NextEventFor(const std::string& resource, const std::string& event,
                    absl::Duration timeout = kTimeout) {
    return NextEventWhere(
        *kubelet_,
        [&](const json& e) {
          return e.value("event", "") == event &&
                 e.value("resource", "") == resource;
        },
        timeout);
  }

  // Shipped machine `name` with its driver version set to `version` (e.g.
  // "570.124.06": NVML's GPU recovery action field needs R565 or later),
  // written to the test directory; returns its path, for StartPlugin.
  std::string MachineWithDriver(const std::string& name,
                                const std::string& version) {
    std::ifstream in(Machine(name));
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    const std::string key = "driver_version: \"";
    const size_t at = text.find(key);
    EXPECT_NE(at, std::string::npos) << name;
    if (at != std::string::npos) {
      const size_t end = text.find('"', at + key.size());
      text.replace(at + key.size(), end - at - key.size(), version);
    }
    const fs::path path = dir_ / (name + "-" + version + ".yaml");
    std::ofstream(path) << text;
    return path.string();
  }

  // Where the plugin keeps its health state unless a test says otherwise.
  std::string StateDir() { return (dir_ / "state").string(); }

  // The fake NVML's control file (fault injection) for the plugin.
  std::string ControlFile() { return (dir_ / "control").string(); }

  // Appends one command to the control file, e.g. "xid 3 48".
  void Control(const std::string& command) {
    std::ofstream(ControlFile(), std::ios::app) << command << "\n";
  }

  // Writes the config file (config.yaml in the test directory) atomically.
  std::string WriteConfig(const std::string& text) {
    fs::path tmp = dir_ / ".config.tmp";
    std::ofstream(tmp) << text;
    fs::rename(tmp, dir_ / "config.yaml");
    return (dir_ / "config.yaml").string();
  }

  // Starts the kubelet emulator and the plugin; returns the first device
  // list of `resource` after it registered.
  json StartAndList(std::vector<std::string> args,
                    const std::string& resource = "nvidia.com/gpu",
                    const std::string& machine = "dgx-a100") {
    StartKubelet();
    StartPlugin(std::move(args), machine);
    json reg = NextEventFor(resource, "register");
    EXPECT_TRUE(reg.value("ok", false)) << reg.dump() << plugin_->Stderr();
    return NextEventFor(resource, "devices");
  }

  // Has the emulator admit a pod asking for `n` devices of `resource`;
  // returns its allocate (or allocate_failed) event.
  json AllocateFor(const std::string& resource, int n, const std::string& pod) {
    kubelet_->WriteLine("allocate " + resource + " " + std::to_string(n) + " " +
                        pod);
    return NextEventWhere(*kubelet_, [&](const json& e) {
      std::string ev = e.value("event", "");
      return (ev == "allocate" || ev == "allocate_failed") &&
             e.value("pod", "") == pod;
    });
  }

  // Waits for registration and the first full device list.
  json Registered() {
    json reg = NextEvent(*kubelet_, "register");
    EXPECT_TRUE(reg.value("ok", false)) << reg.dump() << plugin_->Stderr();
    EXPECT_EQ(reg.value("resource", ""), "nvidia.com/gpu");
    EXPECT_EQ(reg.value("endpoint", ""), "nvidia-gpu.sock");
    return NextEvent(*kubelet_, "devices");
  }

  // `dpctl allocate` straight to the plugin socket.
  std::pair<int, std::string> DpctlAllocate(
      std::vector<std::string> ids,
      const std::string& socket_name = "nvidia-gpu.sock") {
    std::vector<std::string> argv = {GDP_DPCTL_BIN, "allocate", "--socket",
                                     (dir_ / "kp" / socket_name).string(),
                                     "--json"};
    argv.insert(argv.end(), ids.begin(), ids.end());
    Subprocess p({.argv = argv, .stderr_path = (dir_ / "dpctl.err").string()});
    std::string out;
    while (auto line = p.ReadLine(kTimeout)) out += *line + "\n";
    int code = p.Wait(kTimeout).value_or(-1);
    return {code, out + p.Stderr()};
  }

  const gdp::testing::TempDir tmp_{"e2e"};
  const fs::path dir_ = tmp_.path();
  std::unique_ptr<Subprocess> kubelet_, plugin_;
};

}  // namespace gdp

#endif  // GDP_TESTS_INTEGRATION_E2E_FIXTURE_H_
