// `dpctl dra-kubelet`: discovery and registration of DRA plugins.
#include "dra_kubelet.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "dra_kubelet_fixture.h"
#include "testing/fake_dra_plugin.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::DraKubeletTest;
using ::gdp::dpctl::testing::kDriver;
using ::gdp::dpctl::testing::kWait;
using ::gdp::dpctl::testing::TempDir;
using ::gdp::testing::FakeDraPlugin;
using ::gdp::testing::MakeSocketFile;

TEST_F(DraKubeletTest, DiscoversSocketsAtStartAndLater) {
  auto early = Plugin("early");
  ASSERT_TRUE(early->StartRegistration());
  // Ignored: a dotfile socket and a regular file.
  ASSERT_TRUE(MakeSocketFile(dir_.File("registry/.hidden-reg.sock")));
  std::ofstream(dir_.File("registry/notes.txt")) << "x";

  auto runner = Run(Config());
  Json registered = WaitRegistered(*runner, *early);
  EXPECT_EQ(registered.dump(), Json({{"event", "registered"},
                                     {"socket", early->registration_socket()},
                                     {"driver", kDriver},
                                     {"endpoint", early->endpoint_socket()},
                                     {"versions",
                                      {"v1.DRAPlugin", "v1beta1.DRAPlugin",
                                       "v1alpha1.DRAResourceHealth"}},
                                     {"api", "v1"},
                                     {"health", true},
                                     {"ok", true}})
                                   .dump());
  auto notified = early->WaitForNotify();
  ASSERT_TRUE(notified.has_value());
  EXPECT_TRUE(notified->plugin_registered());
  EXPECT_EQ(notified->error(), "");

  auto late = Plugin("late", "other.example.com");
  Json later = Register(*runner, *late);
  EXPECT_EQ(later["driver"], "other.example.com");
  EXPECT_EQ(later["ok"], true);
  ASSERT_TRUE(late->WaitForNotify().has_value());

  std::vector<Json> found = runner->sink.Events("plugin_found");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0]["socket"], early->registration_socket());
  EXPECT_EQ(found[1]["socket"], late->registration_socket());
  EXPECT_EQ(runner->sink.Events("listening")[0]["dir"], dir_.File("registry"));

  runner->Send("list");
  Json list = runner->sink.WaitForEvent("drivers", "", kWait);
  ASSERT_EQ(list["drivers"].size(), 2u);
  EXPECT_EQ(list["drivers"][0]["driver"], kDriver);
  EXPECT_EQ(list["drivers"][1]["driver"], "other.example.com");
  runner->Send("quit");
  EXPECT_EQ(runner->Join(), kDraKubeletOk);
}

TEST_F(DraKubeletTest, ChoosesTheFirstKnownVersion) {
  struct Case {
    std::vector<std::string> versions;
    std::optional<DraApi> only;  // --api
    std::string api;             // chosen; "" refused
  };
  const Case cases[] = {
      {{"v1.DRAPlugin", "v1beta1.DRAPlugin"}, std::nullopt, "v1"},
      {{"v1beta1.DRAPlugin", "v1.DRAPlugin"}, std::nullopt, "v1beta1"},
      {{"v1.DRAPlugin", "v1beta1.DRAPlugin"}, DraApi::kV1beta1, "v1beta1"},
      {{"v1.DRAPlugin"}, DraApi::kV1beta1, ""},
      {{"v1alpha4.Node"}, std::nullopt, ""},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.versions));
    TempDir registry;
    DraKubeletConfig config = Config();
    config.registry_dir = registry.path();
    if (c.only) config.manager.apis.known = {*c.only};
    auto runner = Run(config);
    FakeDraPlugin plugin(
        registry.File("p-reg.sock"),
        dir_.File("plugins/p" + std::to_string(++n) + ".sock"));
    pluginregistration::PluginInfo info = plugin.info();
    info.clear_supported_versions();
    for (const std::string& v : c.versions) info.add_supported_versions(v);
    plugin.SetInfo(info);
    ASSERT_TRUE(plugin.StartEndpoint());
    Json registered = Register(*runner, plugin);
    auto notified = plugin.WaitForNotify();
    ASSERT_TRUE(notified.has_value());
    EXPECT_EQ(notified->plugin_registered(), !c.api.empty());
    EXPECT_EQ(registered["api"], c.api);
    EXPECT_EQ(registered["ok"], !c.api.empty());
    if (c.api.empty()) {
      // The message names the plugin's versions and the known ones.
      const std::string error = notified->error();
      EXPECT_EQ(registered["error"], error);
      EXPECT_NE(error.find("none of services supported by the plugin ([\"" +
                           c.versions[0] + "\"])"),
                std::string::npos)
          << error;
      EXPECT_NE(error.find(c.only ? "([\"v1beta1.DRAPlugin\"])"
                                  : "([\"v1.DRAPlugin\" "
                                    "\"v1beta1.DRAPlugin\"])"),
                std::string::npos)
          << error;
      continue;
    }
    runner->Send("prepare - default/a/uid-1");
    Json prepare = runner->sink.WaitForEvent("prepare", "", kWait);
    EXPECT_EQ(prepare["api"], c.api);
    ASSERT_EQ(plugin.calls().size(), 1u);
    EXPECT_EQ(plugin.calls()[0].api, c.api);
  }
}

TEST_F(DraKubeletTest, RefusesBadTypeAndRelativeEndpoint) {
  auto runner = Run(Config());
  auto csi = Plugin("csi");
  pluginregistration::PluginInfo info = csi->info();
  info.set_type("CSIPlugin");
  csi->SetInfo(info);
  Json registered = Register(*runner, *csi);
  EXPECT_EQ(registered["ok"], false);
  auto notified = csi->WaitForNotify();
  ASSERT_TRUE(notified.has_value());
  EXPECT_FALSE(notified->plugin_registered());
  EXPECT_EQ(notified->error(),
            "RegisterPlugin error -- no handler registered for plugin type: "
            "CSIPlugin at socket " +
                csi->registration_socket());

  auto relative = Plugin("relative");
  info = relative->info();
  info.set_endpoint("relative.sock");
  relative->SetInfo(info);
  registered = Register(*runner, *relative);
  EXPECT_EQ(registered["ok"], false);
  notified = relative->WaitForNotify();
  ASSERT_TRUE(notified.has_value());
  EXPECT_FALSE(notified->plugin_registered());
  EXPECT_NE(notified->error().find("endpoint \"relative.sock\" of DRA driver "
                                   "plugin gpu.nvidia.com is not an absolute "
                                   "path"),
            std::string::npos)
      << notified->error();

  runner->Send("prepare - default/a/uid-1");
  Json error = runner->sink.WaitForEvent("command_error", "", kWait);
  EXPECT_EQ(error["error"], "no DRA driver is registered");
}

TEST_F(DraKubeletTest, RetriesGetInfo) {
  auto runner = Run(Config());
  auto plugin = Plugin("flaky");
  plugin->FailGetInfo(2,
                      grpc::Status(grpc::StatusCode::UNAVAILABLE, "warming"));
  Json registered = Register(*runner, *plugin);
  EXPECT_EQ(registered["ok"], true);
  std::vector<Json> errors = runner->sink.Events("plugin_error");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0]["step"], "GetInfo");
  EXPECT_EQ(errors[0]["error"], "UNAVAILABLE: warming");
  EXPECT_EQ(errors[0]["retry_in_ms"], 50);
  EXPECT_EQ(errors[1]["retry_in_ms"], 100);
  EXPECT_EQ(plugin->get_info_calls(), 3);
}

TEST_F(DraKubeletTest, GivesUpAfterTheLastAttempt) {
  DraKubeletConfig config = Config();
  config.manager.get_info_attempts = 2;
  auto runner = Run(config);
  auto plugin = Plugin("broken");
  plugin->FailGetInfo(5, grpc::Status(grpc::StatusCode::INTERNAL, "boom"));
  ASSERT_TRUE(plugin->StartRegistration());
  Json last = WaitNth(*runner, "plugin_error", 2);
  ASSERT_FALSE(last.is_null());
  EXPECT_FALSE(last.contains("retry_in_ms"));
  EXPECT_EQ(last["error"], "INTERNAL: boom");
}

TEST_F(DraKubeletTest, DeregistersWhenTheSocketGoes) {
  auto runner = Run(Config());
  auto plugin = Plugin("gpu");
  Register(*runner, *plugin);
  ASSERT_TRUE(plugin->WaitForHealthStreams(1));
  plugin->StopRegistration();
  Json gone = WaitFor(*runner, "deregistered");
  ASSERT_FALSE(gone.is_null());
  EXPECT_EQ(gone["endpoint"], plugin->endpoint_socket());
  EXPECT_EQ(gone["socket"], plugin->registration_socket());
  runner->Send("prepare gpu.nvidia.com default/a/uid-1");
  Json error = runner->sink.WaitForEvent("command_error", "", kWait);
  EXPECT_EQ(error["error"], "DRA driver gpu.nvidia.com is not registered");
  // The health stream was closed by the kubelet: it did not end by itself.
  EXPECT_TRUE(runner->sink.Events("health_stream_ended").empty());
}

TEST_F(DraKubeletTest, NewestRegistrationOfADriverIsUsed) {
  auto runner = Run(Config());
  auto first = Plugin("first");
  Register(*runner, *first);
  auto second = Plugin("second");
  Register(*runner, *second);
  runner->Send("prepare gpu.nvidia.com default/a/uid-1");
  ASSERT_FALSE(WaitNth(*runner, "prepare", 1).is_null());
  EXPECT_EQ(first->calls().size(), 0u);
  EXPECT_EQ(second->calls().size(), 1u);

  // A third registration with the endpoint of the second is refused.
  FakeDraPlugin thief(dir_.File("registry/thief-reg.sock"),
                      dir_.File("plugins/thief.sock"));
  pluginregistration::PluginInfo info = thief.info();
  info.set_endpoint(second->endpoint_socket());
  thief.SetInfo(info);
  Json refused = Register(*runner, thief);
  EXPECT_EQ(refused["ok"], false);
  EXPECT_EQ(refused["error"],
            "RegisterPlugin error -- plugin registration failed with err: "
            "endpoint " +
                second->endpoint_socket() +
                " already registered for DRA driver plugin gpu.nvidia.com");

  second->StopRegistration();
  ASSERT_FALSE(WaitFor(*runner, "deregistered").is_null());
  runner->Send("prepare - default/a/uid-1");
  ASSERT_FALSE(WaitNth(*runner, "prepare", 2).is_null());
  EXPECT_EQ(first->calls().size(), 1u);
}

}  // namespace
}  // namespace gdp::dpctl
