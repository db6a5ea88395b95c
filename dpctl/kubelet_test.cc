#include "kubelet.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "emulator_runner.h"
#include "test_support.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::EmulatorRunner;
using ::gdp::dpctl::testing::FakePlugin;
using ::gdp::dpctl::testing::MakeDevice;
using ::gdp::dpctl::testing::TempDir;

constexpr char kGpu[] = "nvidia.com/gpu";

TEST(ParseAutoAllocationTest, Forms) {
  auto a = ParseAutoAllocation("nvidia.com/gpu=2");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->resource, kGpu);
  EXPECT_EQ(a->count, 2);
  EXPECT_EQ(a->pod, "");
  a = ParseAutoAllocation("nvidia.com/gpu=1:web");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->count, 1);
  EXPECT_EQ(a->pod, "web");
  for (const char* bad : {"nvidia.com/gpu", "=2", "nvidia.com/gpu=0",
                          "nvidia.com/gpu=x", "nvidia.com/gpu=1:"}) {
    EXPECT_FALSE(ParseAutoAllocation(bad).ok()) << bad;
  }
}

// Runs RunKubelet with `config` on a thread.
class Runner : public EmulatorRunner {
 public:
  explicit Runner(KubeletConfig config)
      : EmulatorRunner([config = std::move(config)](EventSink* events,
                                                    int input_fd, int stop_fd,
                                                    std::ostream& err) {
          return RunKubelet(config, events, input_fd, stop_fd, err);
        }) {}
};

class KubeletTest : public ::testing::Test {
 protected:
  KubeletConfig Config() {
    KubeletConfig config;
    config.dir = dir_.path();
    config.dial_timeout = absl::Seconds(2);
    return config;
  }
  // A registered plugin with three healthy GPUs. Started after the kubelet
  // listens: the kubelet removes the sockets it finds when it starts.
  std::unique_ptr<FakePlugin> RegisterPlugin(Runner& runner) {
    EXPECT_FALSE(runner.sink.WaitForEvent("listening").is_null());
    auto plugin = std::make_unique<FakePlugin>(dir_.File("gpu.sock"));
    plugin->SetDevices({MakeDevice("g0"), MakeDevice("g1"), MakeDevice("g2")});
    EXPECT_TRUE(plugin->Start());
    grpc::Status status =
        plugin->Register(dir_.File("kubelet.sock"), kGpu, "gpu.sock");
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_FALSE(runner.sink.WaitForEvent("devices").is_null());
    return plugin;
  }

  TempDir dir_;
};

TEST_F(KubeletTest, CommandsFromInput) {
  Runner runner(Config());
  auto plugin = RegisterPlugin(runner);

  runner.Send("allocate nvidia.com/gpu 2 web");
  Json allocate = runner.sink.WaitForEvent("allocate");
  EXPECT_EQ(allocate["pod"], "web");
  EXPECT_EQ(allocate["devices"].dump(), R"(["g0","g1"])");

  runner.Send("  allocate   nvidia.com/gpu 2  ");
  EXPECT_EQ(runner.sink.WaitForEvent("allocate_failed").dump(),
            R"({"event":"allocate_failed","resource":"nvidia.com/gpu",)"
            R"("pod":"pod-1","error":"only 1 healthy free device, 2 wanted"})");

  runner.Send("free web");
  EXPECT_EQ(runner.sink.WaitForEvent("freed")["devices"].dump(),
            R"(["g0","g1"])");
  runner.Send("");
  runner.Send("list");
  int devices_events = 0;
  Json listed = runner.sink.WaitFor([&](const Json& e) {
    return e["event"] == "devices" && ++devices_events == 2;
  });
  ASSERT_FALSE(listed.is_null());
  EXPECT_EQ(listed["total"], 3);
  runner.Send("free nobody");
  runner.Send("frobnicate");
  Json error = runner.sink.WaitFor([](const Json& e) {
    return e["event"] == "command_error" && e["command"] == "frobnicate";
  });
  ASSERT_FALSE(error.is_null());
  EXPECT_NE(error["error"].get<std::string>().find("usage: allocate"),
            std::string::npos);
  EXPECT_EQ(runner.sink.Events("command_error")[0]["error"],
            "pod nobody holds no devices");

  // End of input does not stop the kubelet; the stop fd does.
  runner.CloseInput();
  absl::SleepFor(absl::Milliseconds(50));
  plugin->SetDevices({MakeDevice("g0")});
  EXPECT_FALSE(runner.sink
                   .WaitFor([](const Json& e) {
                     return e["event"] == "devices" && e["total"] == 1;
                   })
                   .is_null());
  runner.Stop();
  EXPECT_EQ(runner.Join(), kKubeletOk);
  EXPECT_FALSE(std::filesystem::exists(dir_.File("kubelet.sock")));
}

TEST_F(KubeletTest, QuitStops) {
  Runner runner(Config());
  ASSERT_FALSE(runner.sink.WaitForEvent("listening").is_null());
  runner.Send("quit");
  EXPECT_EQ(runner.Join(), kKubeletOk);
}

TEST_F(KubeletTest, AutoAllocationThenExit) {
  KubeletConfig config = Config();
  config.allocations = {{kGpu, 2, ""}, {kGpu, 1, "solo"}};
  config.exit_after_allocate = true;
  Runner runner(config);
  auto plugin = RegisterPlugin(runner);
  EXPECT_EQ(runner.Join(), kKubeletOk);
  std::vector<Json> allocations = runner.sink.Events("allocate");
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_EQ(allocations[0]["pod"], "pod-1");
  EXPECT_EQ(allocations[1]["pod"], "solo");
  EXPECT_FALSE(std::filesystem::exists(dir_.File("kubelet.sock")));
}

TEST_F(KubeletTest, FailedAutoAllocationExitsNonZero) {
  KubeletConfig config = Config();
  config.allocations = {{kGpu, 1, "p"}};
  config.exit_after_allocate = true;
  Runner runner(config);
  ASSERT_FALSE(runner.sink.WaitForEvent("listening").is_null());
  auto plugin = std::make_unique<FakePlugin>(dir_.File("gpu.sock"));
  plugin->SetDevices({MakeDevice("g0")});
  plugin->SetAllocateError(
      grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "busy"));
  ASSERT_TRUE(plugin->Start());
  ASSERT_TRUE(
      plugin->Register(dir_.File("kubelet.sock"), kGpu, "gpu.sock").ok());
  EXPECT_EQ(runner.Join(), kKubeletAllocationFailed);
  EXPECT_EQ(runner.sink.WaitForEvent("allocate")["error"]["code"],
            "FAILED_PRECONDITION");
}

TEST(KubeletStartTest, TooLongSocketPathFails) {
  TempDir dir;
  KubeletConfig config;
  config.dir = dir.path().string() + "/" + std::string(120, 'd');
  Runner runner(config);
  EXPECT_EQ(runner.Join(), kKubeletStartFailed);
  EXPECT_NE(runner.err.str().find("error: socket path"), std::string::npos)
      << runner.err.str();
}

}  // namespace
}  // namespace gdp::dpctl
