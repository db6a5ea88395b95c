// The fixture of the `dpctl dra-kubelet` tests: runs RunDraKubelet with
// short retry and health delays, and creates scripted DRA plugins beside it.
#ifndef GDP_DPCTL_DRA_KUBELET_FIXTURE_H_
#define GDP_DPCTL_DRA_KUBELET_FIXTURE_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "dra_kubelet.h"
#include "emulator_runner.h"
#include "test_support.h"
#include "testing/fake_dra_plugin.h"

namespace gdp::dpctl::testing {

using ::gdp::testing::FakeDraPlugin;

inline constexpr char kDriver[] = "gpu.nvidia.com";
// Generous: the machine running the tests may be busy.
inline constexpr absl::Duration kWait = absl::Seconds(20);

// Each test gets a fresh directory: the registry is <dir>/registry, plugin
// endpoints go to <dir>/plugins.
class DraKubeletTest : public ::testing::Test {
 protected:
  DraKubeletTest() {
    std::filesystem::create_directories(dir_.File("plugins"));
  }

  // The registry <dir>/registry, with short retry and health delays and
  // generous deadlines.
  DraKubeletConfig Config() {
    DraKubeletConfig config;
    config.registry_dir = dir_.File("registry");
    config.manager.get_info_timeout = absl::Seconds(5);
    config.manager.initial_backoff = absl::Milliseconds(50);
    config.manager.health_retry = absl::Milliseconds(200);
    config.call_timeout = absl::Seconds(20);
    return config;
  }

  // Runs RunDraKubelet(config) on a thread.
  std::unique_ptr<EmulatorRunner> Run(DraKubeletConfig config) {
    return std::make_unique<EmulatorRunner>(
        [config = std::move(config)](EventSink* events, int input, int stop,
                                     std::ostream& err) {
          return RunDraKubelet(config, events, input, stop, err);
        });
  }

  // A plugin of `driver` with registration socket
  // <registry>/<name>-reg.sock and endpoint <dir>/plugins/<name>.sock,
  // serving its endpoint (the registration socket is up to the test).
  std::unique_ptr<FakeDraPlugin> Plugin(const std::string& name,
                                        const std::string& driver = kDriver) {
    std::filesystem::create_directories(dir_.File("registry"));
    auto plugin = std::make_unique<FakeDraPlugin>(
        dir_.File("registry/" + name + "-reg.sock"),
        dir_.File("plugins/" + name + ".sock"));
    pluginregistration::PluginInfo info = plugin->info();
    info.set_name(driver);
    plugin->SetInfo(info);
    EXPECT_TRUE(plugin->StartEndpoint());
    return plugin;
  }

  // Starts `plugin`'s registration socket and waits for its registered
  // event.
  Json Register(EmulatorRunner& runner, FakeDraPlugin& plugin) {
    EXPECT_TRUE(plugin.StartRegistration());
    return WaitRegistered(runner, plugin);
  }

  // Waits for the registered event of `plugin`'s registration socket.
  static Json WaitRegistered(EmulatorRunner& runner, FakeDraPlugin& plugin) {
    Json registered = runner.sink.WaitFor(
        [&](const Json& e) {
          return e["event"] == "registered" &&
                 e["socket"] == plugin.registration_socket();
        },
        kWait);
    EXPECT_FALSE(registered.is_null()) << plugin.registration_socket();
    return registered;
  }

  // Waits for the first event `kind` of driver kDriver.
  static Json WaitFor(EmulatorRunner& runner, const std::string& kind) {
    return runner.sink.WaitFor(
        [&](const Json& e) {
          return e["event"] == kind && e.value("driver", "") == kDriver;
        },
        kWait);
  }

  // Waits for the n-th (from 1) event of `kind`.
  static Json WaitNth(EmulatorRunner& runner, const std::string& kind, int n) {
    int seen = 0;
    return runner.sink.WaitFor(
        [&](const Json& e) { return e["event"] == kind && ++seen == n; },
        kWait);
  }

  TempDir dir_;
};

}  // namespace gdp::dpctl::testing

#endif  // GDP_DPCTL_DRA_KUBELET_FIXTURE_H_
