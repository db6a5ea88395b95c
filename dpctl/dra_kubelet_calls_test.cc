// `dpctl dra-kubelet`: prepare, unprepare, health and --prepare.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "dra_kubelet.h"
#include "dra_kubelet_fixture.h"
#include "testing/fake_dra_plugin.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::DraKubeletTest;
using ::gdp::dpctl::testing::EmulatorRunner;
using ::gdp::dpctl::testing::kWait;
using ::gdp::dpctl::testing::TempDir;
using ::gdp::testing::FakeDraPlugin;
using ::gdp::testing::MakeDeviceHealth;

TEST_F(DraKubeletTest, PrepareAndUnprepare) {
  auto runner = Run(Config());
  auto plugin = Plugin("gpu");
  drav1::NodePrepareResourceResponse failed;
  failed.set_error("claim not allocated");
  plugin->SetPrepareAnswer("uid-2", failed);
  plugin->Omit("uid-3");
  plugin->SetUnprepareError("uid-2", "still in use");
  Register(*runner, *plugin);

  runner->Send(
      "prepare gpu.nvidia.com default/a/uid-1 default/b/uid-2 "
      "ml/c/uid-3");
  Json prepare = WaitFor(*runner, "prepare");
  ASSERT_FALSE(prepare.is_null());
  prepare.erase("elapsed_ms");
  EXPECT_EQ(prepare.dump(),
            R"({"event":"prepare","driver":"gpu.nvidia.com","api":"v1",)"
            R"("claims":{"uid-1":{"devices":[{"requests":[],)"
            R"("pool":"pool-a","device":"gpu-uid-1",)"
            R"("cdi_ids":["k8s.gpu.nvidia.com/claim=uid-1"]}],"error":""},)"
            R"("uid-2":{"devices":[],"error":"claim not allocated"}},)"
            R"("missing":["uid-3"]})");
  ASSERT_EQ(plugin->calls().size(), 1u);
  const std::vector<ClaimRef> claims = plugin->calls()[0].claims;
  ASSERT_EQ(claims.size(), 3u);
  EXPECT_EQ(ClaimRefText(claims[2]), "ml/c/uid-3");

  runner->Send("unprepare - default/a/uid-1 default/b/uid-2 ml/c/uid-3");
  Json unprepare = WaitFor(*runner, "unprepare");
  ASSERT_FALSE(unprepare.is_null());
  unprepare.erase("elapsed_ms");
  EXPECT_EQ(
      unprepare.dump(),
      R"({"event":"unprepare","driver":"gpu.nvidia.com","api":"v1",)"
      R"("claims":{"uid-1":{"error":""},"uid-2":{"error":"still in use"}},)"
      R"("missing":["uid-3"]})");

  plugin->SetCallError(
      grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not ready"));
  runner->Send("prepare - default/a/uid-1");
  Json failed_call = WaitFor(*runner, "prepare_failed");
  EXPECT_EQ(failed_call["code"], "FAILED_PRECONDITION");
  EXPECT_EQ(failed_call["message"], "not ready");
  runner->Send("unprepare - default/a/uid-1");
  EXPECT_EQ(WaitFor(*runner, "unprepare_failed")["code"],
            "FAILED_PRECONDITION");

  for (const char* bad : {"prepare", "prepare gpu.nvidia.com",
                          "prepare - default/a", "list x", "frob"}) {
    runner->Send(bad);
    Json error = runner->sink.WaitFor(
        [&](const Json& e) {
          return e["event"] == "command_error" && e["command"] == bad;
        },
        kWait);
    EXPECT_FALSE(error.is_null()) << bad;
  }
  // End of input does not stop it; the stop fd does.
  runner->CloseInput();
  runner->Send("list");
  runner->Stop();
  EXPECT_EQ(runner->Join(), kDraKubeletOk);
}

TEST_F(DraKubeletTest, HealthStreamIsReopened) {
  auto runner = Run(Config());
  auto plugin = Plugin("gpu");
  v1alpha1::NodeWatchResourcesResponse health;
  *health.add_devices() =
      MakeDeviceHealth("pool-a", "gpu-0", v1alpha1::HEALTHY);
  *health.add_devices() = MakeDeviceHealth(
      "pool-a", "gpu-1", v1alpha1::UNHEALTHY, 1700000001, 30, "XID 79");
  plugin->SendHealth(health);
  Register(*runner, *plugin);
  Json first = WaitFor(*runner, "health");
  ASSERT_FALSE(first.is_null());
  EXPECT_EQ(first["devices"].dump(),
            R"([{"pool":"pool-a","device":"gpu-0","health":"Healthy",)"
            R"("last_updated":1700000000,"timeout_seconds":0,"message":""},)"
            R"({"pool":"pool-a","device":"gpu-1","health":"Unhealthy",)"
            R"("last_updated":1700000001,"timeout_seconds":30,)"
            R"("message":"XID 79"}])");

  plugin->EndHealthStreams();
  Json ended = WaitFor(*runner, "health_stream_ended");
  ASSERT_FALSE(ended.is_null());
  EXPECT_EQ(ended["error"], "EOF");
  EXPECT_EQ(ended["retry_in_ms"], 200);
  ASSERT_TRUE(plugin->WaitForHealthStreams(2));
  // The re-opened stream sends the list again.
  ASSERT_FALSE(WaitNth(*runner, "health", 2).is_null());
}

TEST_F(DraKubeletTest, NoHealthStreamWithNoHealth) {
  DraKubeletConfig config = Config();
  config.manager.apis.health = false;
  auto runner = Run(config);
  auto plugin = Plugin("gpu");
  Json registered = Register(*runner, *plugin);
  EXPECT_EQ(registered["health"], false);
  EXPECT_FALSE(plugin->WaitForHealthStreams(1, absl::Milliseconds(500)));
}

TEST_F(DraKubeletTest, PrepareFlagThenExit) {
  struct Case {
    const char* name;
    std::function<void(FakeDraPlugin&)> script;
    int code;
  };
  const Case cases[] = {
      {"ok", [](FakeDraPlugin&) {}, kDraKubeletOk},
      {"claim error",
       [](FakeDraPlugin& p) {
         drav1::NodePrepareResourceResponse r;
         r.set_error("nope");
         p.SetPrepareAnswer("uid-2", r);
       },
       kDraKubeletPrepareFailed},
      {"missing claim", [](FakeDraPlugin& p) { p.Omit("uid-1"); },
       kDraKubeletPrepareFailed},
      {"gRPC error",
       [](FakeDraPlugin& p) {
         p.SetCallError(grpc::Status(grpc::StatusCode::INTERNAL, "boom"));
       },
       kDraKubeletPrepareFailed},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir registry;
    DraKubeletConfig config = Config();
    config.registry_dir = registry.path();
    config.prepare = {{"default", "a", "uid-1"}, {"default", "b", "uid-2"}};
    config.exit_after_prepare = true;
    auto runner = Run(config);
    FakeDraPlugin plugin(
        registry.File("p-reg.sock"),
        dir_.File("plugins/x" + std::to_string(++n) + ".sock"));
    c.script(plugin);
    ASSERT_TRUE(plugin.StartEndpoint());
    ASSERT_TRUE(plugin.StartRegistration());
    EXPECT_EQ(runner->Join(), c.code);
    ASSERT_EQ(plugin.calls().size(), 1u);
    EXPECT_EQ(plugin.calls()[0].claims.size(), 2u);
  }
}

TEST(DraKubeletStartTest, UnusableRegistryDirFails) {
  TempDir dir;
  std::ofstream(dir.File("file")) << "x";
  DraKubeletConfig config;
  config.registry_dir = dir.File("file") + "/registry";
  EmulatorRunner runner(
      [&](EventSink* events, int input, int stop, std::ostream& err) {
        return RunDraKubelet(config, events, input, stop, err);
      });
  EXPECT_EQ(runner.Join(), kDraKubeletStartFailed);
  EXPECT_NE(runner.err.str().find("error: cannot create"), std::string::npos)
      << runner.err.str();
}

}  // namespace
}  // namespace gdp::dpctl
