// `dpctl dra ...` in-process, and the dpctl binary's DRA commands: argument
// handling, exit codes, signals and the line-per-event output.
#include "dra_cli.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "dpctl_process.h"
#include "test_support.h"
#include "testing/fake_dra_plugin.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::DpctlProcess;
using ::gdp::dpctl::testing::TempDir;
using ::gdp::testing::FakeDraPlugin;
using ::gdp::testing::MakeDeviceHealth;

class DraCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plugin_ = std::make_unique<FakeDraPlugin>(dir_.File("reg.sock"),
                                              dir_.File("dra.sock"));
    ASSERT_TRUE(plugin_->StartEndpoint());
    ASSERT_TRUE(plugin_->StartRegistration());
    config_.socket = dir_.File("dra.sock");
    config_.format = OutputFormat::kJson;
  }

  TempDir dir_;
  std::unique_ptr<FakeDraPlugin> plugin_;
  DraClientConfig config_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(DraCliTest, Info) {
  config_.socket = dir_.File("reg.sock");
  EXPECT_EQ(RunDraInfo(config_, out_, err_), kExitOk);
  EXPECT_EQ(out_.str(),
            R"({"event":"info","socket":")" + dir_.File("reg.sock") +
                R"(","type":"DRAPlugin","name":"gpu.nvidia.com","endpoint":")" +
                dir_.File("dra.sock") +
                R"(","versions":["v1.DRAPlugin","v1beta1.DRAPlugin",)"
                R"("v1alpha1.DRAResourceHealth"],"api":"v1","health":true})"
                "\n");
  EXPECT_EQ(err_.str(), "");
  // Info does not register.
  EXPECT_FALSE(plugin_->WaitForNotify(absl::ZeroDuration()).has_value());

  pluginregistration::PluginInfo info = plugin_->info();
  info.set_endpoint("dra.sock");
  plugin_->SetInfo(info);
  config_.format = OutputFormat::kText;
  std::ostringstream text;
  EXPECT_EQ(RunDraInfo(config_, text, err_), kExitOk);
  EXPECT_TRUE(
      absl::StrContains(text.str(),
                        "a kubelet refuses it: RegisterPlugin error -- plugin "
                        "validation failed with err: endpoint \"dra.sock\""))
      << text.str();
}

TEST_F(DraCliTest, PrepareAndUnprepare) {
  EXPECT_EQ(RunDraPrepare(config_, {{"default", "a", "uid-1"}}, out_, err_),
            kExitOk);
  Json prepare = Json::parse(out_.str());
  EXPECT_EQ(prepare["claims"].dump(),
            R"({"uid-1":{"devices":[{"requests":[],"pool":"pool-a",)"
            R"("device":"gpu-uid-1",)"
            R"("cdi_ids":["k8s.gpu.nvidia.com/claim=uid-1"]}],"error":""}})");
  EXPECT_FALSE(prepare.contains("driver"));

  plugin_->Omit("uid-2");
  config_.api = DraApi::kV1beta1;
  config_.format = OutputFormat::kText;
  std::ostringstream text;
  EXPECT_EQ(RunDraUnprepare(config_,
                            {{"default", "a", "uid-1"}, {"ns", "b", "uid-2"}},
                            text, err_),
            kExitClaimError);
  EXPECT_TRUE(absl::StartsWith(text.str(), "unprepare (api v1beta1, "))
      << text.str();
  EXPECT_TRUE(absl::StrContains(text.str(),
                                "1 claim, 1 missing\n  uid-1: ok\n"
                                "  uid-2: missing from the answer\n"))
      << text.str();
  ASSERT_EQ(plugin_->calls().size(), 2u);
  EXPECT_EQ(plugin_->calls()[1].api, "v1beta1");
  EXPECT_EQ(plugin_->calls()[1].method, "unprepare");

  plugin_->SetCallError(grpc::Status(grpc::StatusCode::ABORTED, "busy"));
  std::ostringstream failed;
  EXPECT_EQ(RunDraPrepare(config_, {{"default", "a", "uid-1"}}, failed, err_),
            kExitRpcError);
  EXPECT_EQ(err_.str(), "error: ABORTED: busy\n");
  config_.format = OutputFormat::kJson;
  EXPECT_EQ(RunDraPrepare(config_, {{"default", "a", "uid-1"}}, failed, err_),
            kExitRpcError);
  EXPECT_EQ(failed.str(), R"({"error":{"code":"ABORTED","message":"busy"}})"
                          "\n");
}

TEST_F(DraCliTest, HealthUntilTheStreamEnds) {
  v1alpha1::NodeWatchResourcesResponse health;
  *health.add_devices() = MakeDeviceHealth("p", "gpu-0", v1alpha1::UNHEALTHY);
  plugin_->SendHealth(health);
  std::thread ender([this] {
    plugin_->WaitForHealthStreams(1);
    // Ends the stream once it has had time to send; the client prints the
    // message either way, as it arrives before the end.
    absl::SleepFor(absl::Milliseconds(200));
    plugin_->EndHealthStreams();
  });
  EXPECT_EQ(RunDraHealth(config_, out_, err_), kExitOk);
  ender.join();
  EXPECT_EQ(out_.str(),
            R"({"event":"health","devices":[{"pool":"p","device":"gpu-0",)"
            R"("health":"Unhealthy","last_updated":1700000000,)"
            R"("timeout_seconds":0,"message":""}]})"
            "\n"
            R"({"event":"health_stream_ended","error":"EOF"})"
            "\n");
}

TEST_F(DraCliTest, HealthUntilTheTimeout) {
  config_.timeout = absl::Milliseconds(300);
  EXPECT_EQ(RunDraHealth(config_, out_, err_), kExitOk);
  EXPECT_EQ(out_.str(), "");
}

TEST_F(DraCliTest, UnreachableSocket) {
  config_.socket = dir_.File("none.sock");
  EXPECT_EQ(RunDraPrepare(config_, {{"a", "b", "c"}}, out_, err_),
            kExitConnectError);
  EXPECT_EQ(out_.str(), R"({"error":{"code":"UNAVAILABLE","message":)"
                        R"("cannot connect to unix:)" +
                            dir_.File("none.sock") +
                            R"(: no such socket"}})"
                            "\n");
}

TEST(DraClientTest, ParseClaimRef) {
  absl::StatusOr<ClaimRef> claim = ParseClaimRef("default/train/uid-1");
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(claim->ns, "default");
  EXPECT_EQ(claim->name, "train");
  EXPECT_EQ(claim->uid, "uid-1");
  for (const char* bad : {"", "a/b", "a/b/c/d", "/b/c", "a//c", "a/b/"}) {
    EXPECT_FALSE(ParseClaimRef(bad).ok()) << bad;
  }
  EXPECT_EQ(ApiName(*ParseApi("v1beta1")), "v1beta1");
  EXPECT_FALSE(ParseApi("v2").ok());
}

TEST(DraBinaryTest, UsageErrorsExit64) {
  const std::vector<std::vector<std::string>> cases = {
      {"dra-kubelet"},
      {"dra-kubelet", "--registry-dir", "/tmp/x", "--api", "v2"},
      {"dra-kubelet", "--registry-dir", "/tmp/x", "--exit-after-prepare"},
      {"dra-kubelet", "--registry-dir", "/tmp/x", "--prepare", "a/b"},
      {"dra"},
      {"dra", "info"},
      {"dra", "prepare", "--socket", "/tmp/x"},
      {"dra", "prepare", "--socket", "/tmp/x", "a/b"},
      {"dra", "unprepare", "--socket", "/tmp/x", "--api", "v3", "a/b/c"},
      {"dra", "health", "--socket", "/tmp/x", "--timeout", "0"},
  };
  for (const auto& args : cases) {
    DpctlProcess p(args);
    EXPECT_EQ(p.Wait(), 64) << ::testing::PrintToString(args);
    EXPECT_FALSE(p.Stderr().empty()) << ::testing::PrintToString(args);
  }
}

TEST(DraBinaryTest, KubeletTextStopsOnSigterm) {
  TempDir dir;
  DpctlProcess p({"dra-kubelet", "--registry-dir", dir.File("registry")});
  EXPECT_EQ(p.ReadUntil("listening"),
            "listening for DRA plugins in " + dir.File("registry"));
  FakeDraPlugin plugin(dir.File("registry/gpu-reg.sock"), dir.File("dra.sock"));
  ASSERT_TRUE(plugin.StartEndpoint());
  ASSERT_TRUE(plugin.StartRegistration());
  EXPECT_EQ(p.ReadUntil("registered"),
            "registered gpu.nvidia.com (endpoint " + dir.File("dra.sock") +
                ", versions [v1.DRAPlugin, v1beta1.DRAPlugin, "
                "v1alpha1.DRAResourceHealth], api v1, health): ok");
  p.Write("prepare - default/train/uid-1\n");
  EXPECT_TRUE(absl::StartsWith(p.ReadUntil("prepare"),
                               "prepare gpu.nvidia.com (api v1, "));
  EXPECT_EQ(p.ReadUntil("uid-1:"),
            "  uid-1: pool-a/gpu-uid-1 -> [k8s.gpu.nvidia.com/claim=uid-1]");
  p.Write("frob\n");
  EXPECT_TRUE(absl::StartsWith(p.ReadUntil("command_error"),
                               "command_error \"frob\": usage: prepare"));
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait(), 0);
}

TEST(DraBinaryTest, KubeletPreparesAndExits) {
  TempDir dir;
  FakeDraPlugin plugin(dir.File("registry/gpu-reg.sock"), dir.File("dra.sock"));
  drav1::NodePrepareResourceResponse failed;
  failed.set_error("not allocated");
  plugin.SetPrepareAnswer("uid-2", failed);
  ASSERT_TRUE(plugin.StartEndpoint());
  std::filesystem::create_directories(dir.File("registry"));
  ASSERT_TRUE(plugin.StartRegistration());
  for (const auto& [uid, code] :
       {std::pair{std::string("uid-1"), 0}, {std::string("uid-2"), 1}}) {
    DpctlProcess p({"dra-kubelet", "--registry-dir", dir.File("registry"),
                    "--json", "--no-health", "--prepare", "default/a/" + uid,
                    "--exit-after-prepare"});
    std::string line = p.ReadUntil(R"("event":"prepare")");
    EXPECT_TRUE(absl::StrContains(line, R"("claims":{")" + uid + R"(":)"))
        << line;
    EXPECT_EQ(p.Wait(), code) << uid;
  }
}

TEST(DraBinaryTest, OneShotExitCodes) {
  TempDir dir;
  DpctlProcess unreachable(
      {"dra", "prepare", "--socket", dir.File("none.sock"), "a/b/c"});
  EXPECT_EQ(unreachable.Wait(), 3);
  EXPECT_EQ(unreachable.Stderr(),
            "error: UNAVAILABLE: cannot connect to unix:" +
                dir.File("none.sock") + ": no such socket\n");
  FakeDraPlugin plugin(dir.File("reg.sock"), dir.File("dra.sock"));
  ASSERT_TRUE(plugin.StartEndpoint());
  ASSERT_TRUE(plugin.StartRegistration());
  DpctlProcess info({"dra", "info", "--socket", dir.File("reg.sock")});
  EXPECT_TRUE(absl::StrContains(info.ReadUntil("info"),
                                "; a kubelet uses api v1 and health"));
  EXPECT_EQ(info.Wait(), 0);
  plugin.Omit("uid-9");
  DpctlProcess missing({"dra", "prepare", "--socket", dir.File("dra.sock"),
                        "--json", "default/a/uid-9"});
  EXPECT_TRUE(absl::StrContains(missing.ReadUntil("prepare"),
                                R"("missing":["uid-9"])"));
  EXPECT_EQ(missing.Wait(), 1);
}

}  // namespace
}  // namespace gdp::dpctl
