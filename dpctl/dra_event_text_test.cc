#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "dra_events.h"
#include "event_printer.h"
#include "testing/fake_dra_plugin.h"

namespace gdp::dpctl {
namespace {

using ::gdp::testing::MakeDeviceHealth;

const std::vector<ClaimRef> kAsked = {
    {"default", "train", "uid-1"},
    {"default", "infer", "uid-2"},
    {"ml", "eval", "uid-3"},
};

drav1::NodePrepareResourcesResponse PrepareAnswer() {
  drav1::NodePrepareResourcesResponse r;
  drav1::Device* d = (*r.mutable_claims())["uid-1"].add_devices();
  d->add_request_names("gpu");
  d->set_pool_name("node-a");
  d->set_device_name("gpu-0");
  d->add_cdi_device_ids("k8s.gpu.nvidia.com/claim=uid-1-gpu-0");
  d->set_share_id("share-7");
  (*r.mutable_claims())["uid-2"].set_error("no such claim");
  (*r.mutable_claims())["uid-9"];  // not asked for
  return r;
}

TEST(DraEventsTest, PrepareJson) {
  Json e = PrepareEvent("gpu.nvidia.com", DraApi::kV1, kAsked, PrepareAnswer(),
                        absl::Milliseconds(12));
  EXPECT_EQ(
      e.dump(),
      R"({"event":"prepare","driver":"gpu.nvidia.com","api":"v1","claims":{)"
      R"("uid-1":{"devices":[{"requests":["gpu"],"pool":"node-a",)"
      R"("device":"gpu-0","cdi_ids":["k8s.gpu.nvidia.com/claim=uid-1-gpu-0"],)"
      R"("share_id":"share-7"}],"error":""},)"
      R"("uid-2":{"devices":[],"error":"no such claim"},)"
      R"("uid-9":{"devices":[],"error":""}},)"
      R"("missing":["uid-3"],"elapsed_ms":12})");
  EXPECT_FALSE(AllClaimsOk(e));
}

TEST(DraEventsTest, PrepareText) {
  Json e = PrepareEvent("gpu.nvidia.com", DraApi::kV1beta1, kAsked,
                        PrepareAnswer(), absl::Milliseconds(12));
  EXPECT_EQ(EventText(e),
            "prepare gpu.nvidia.com (api v1beta1, 12 ms): 3 claims, 1 missing\n"
            "  uid-1: node-a/gpu-0 requests [gpu] share share-7 -> "
            "[k8s.gpu.nvidia.com/claim=uid-1-gpu-0]\n"
            "  uid-2: error: no such claim\n"
            "  uid-9: no devices\n"
            "  uid-3: missing from the answer");
}

TEST(DraEventsTest, UnprepareJsonAndText) {
  drav1::NodeUnprepareResourcesResponse r;
  (*r.mutable_claims())["uid-1"];
  (*r.mutable_claims())["uid-2"].set_error("busy");
  Json e = UnprepareEvent("", DraApi::kV1, {kAsked[0], kAsked[1]}, r,
                          absl::Milliseconds(3));
  EXPECT_EQ(e.dump(),
            R"({"event":"unprepare","api":"v1","claims":{"uid-1":{"error":""},)"
            R"("uid-2":{"error":"busy"}},"missing":[],"elapsed_ms":3})");
  EXPECT_FALSE(AllClaimsOk(e));
  EXPECT_EQ(EventText(e),
            "unprepare (api v1, 3 ms): 2 claims\n  uid-1: ok\n"
            "  uid-2: error: busy");
  (*r.mutable_claims())["uid-2"].clear_error();
  EXPECT_TRUE(AllClaimsOk(
      UnprepareEvent("", DraApi::kV1, {kAsked[1]}, r, absl::ZeroDuration())));
}

TEST(DraEventsTest, CallFailed) {
  Json e = CallFailedEvent("prepare", "gpu.nvidia.com", DraApi::kV1,
                           absl::UnavailableError("plugin gone"),
                           absl::Milliseconds(5));
  EXPECT_EQ(e.dump(),
            R"({"event":"prepare_failed","driver":"gpu.nvidia.com",)"
            R"("api":"v1","code":"UNAVAILABLE","message":"plugin gone",)"
            R"("elapsed_ms":5})");
  EXPECT_EQ(EventText(e),
            "prepare_failed gpu.nvidia.com (api v1, 5 ms): UNAVAILABLE: plugin "
            "gone");
}

TEST(DraEventsTest, Health) {
  v1alpha1::NodeWatchResourcesResponse r;
  *r.add_devices() =
      MakeDeviceHealth("node-a", "gpu-0", v1alpha1::HEALTHY, 1700000000);
  *r.add_devices() = MakeDeviceHealth("node-a", "gpu-1", v1alpha1::UNHEALTHY,
                                      1700000060, 45, "XID 79");
  *r.add_devices() = MakeDeviceHealth(
      "node-a", "gpu-2", static_cast<v1alpha1::HealthStatus>(7), 0);
  Json e = HealthEvent("gpu.nvidia.com", r);
  EXPECT_EQ(e.dump(),
            R"({"event":"health","driver":"gpu.nvidia.com","devices":[)"
            R"({"pool":"node-a","device":"gpu-0","health":"Healthy",)"
            R"("last_updated":1700000000,"timeout_seconds":0,"message":""},)"
            R"({"pool":"node-a","device":"gpu-1","health":"Unhealthy",)"
            R"("last_updated":1700000060,"timeout_seconds":45,)"
            R"("message":"XID 79"},)"
            R"({"pool":"node-a","device":"gpu-2","health":"Unknown",)"
            R"("last_updated":0,"timeout_seconds":0,"message":""}]})");
  EXPECT_EQ(EventText(e),
            "health gpu.nvidia.com: 1/3 healthy\n"
            "  node-a/gpu-0 (Healthy, updated 2023-11-14T22:13:20Z)\n"
            "  node-a/gpu-1 (Unhealthy, updated 2023-11-14T22:14:20Z, timeout "
            "45 s): XID 79\n"
            "  node-a/gpu-2 (Unknown, updated 1970-01-01T00:00:00Z)");
  EXPECT_EQ(EventText(HealthStreamEndedEvent("gpu.nvidia.com", absl::OkStatus(),
                                             absl::Seconds(5))),
            "health_stream_ended gpu.nvidia.com: EOF (retry in 5000 ms)");
  EXPECT_EQ(HealthStreamEndedEvent("d", absl::UnimplementedError("no")).dump(),
            R"({"event":"health_stream_ended","driver":"d",)"
            R"("error":"UNIMPLEMENTED: no"})");
}

TEST(DraEventsTest, Registration) {
  RegistrationReport r;
  r.socket = "/reg/gpu-reg.sock";
  r.driver = "gpu.nvidia.com";
  r.endpoint = "/p/dra.sock";
  r.versions = {"v1.DRAPlugin", "v1alpha1.DRAResourceHealth"};
  r.api = DraApi::kV1;
  r.health = true;
  EXPECT_EQ(RegisteredEvent(r).dump(),
            R"({"event":"registered","socket":"/reg/gpu-reg.sock",)"
            R"("driver":"gpu.nvidia.com","endpoint":"/p/dra.sock",)"
            R"("versions":["v1.DRAPlugin","v1alpha1.DRAResourceHealth"],)"
            R"("api":"v1","health":true,"ok":true})");
  EXPECT_EQ(EventText(RegisteredEvent(r)),
            "registered gpu.nvidia.com (endpoint /p/dra.sock, versions "
            "[v1.DRAPlugin, v1alpha1.DRAResourceHealth], api v1, health): ok");
  r.api.reset();
  r.health = false;
  r.error = "bad";
  EXPECT_EQ(RegisteredEvent(r).dump(),
            R"({"event":"registered","socket":"/reg/gpu-reg.sock",)"
            R"("driver":"gpu.nvidia.com","endpoint":"/p/dra.sock",)"
            R"("versions":["v1.DRAPlugin","v1alpha1.DRAResourceHealth"],)"
            R"("api":"","health":false,"ok":false,"error":"bad"})");
  EXPECT_EQ(EventText(RegisteredEvent(r)),
            "registered gpu.nvidia.com (endpoint /p/dra.sock, versions "
            "[v1.DRAPlugin, v1alpha1.DRAResourceHealth]): refused: bad");
  EXPECT_EQ(EventText(DeregisteredEvent("gpu.nvidia.com", "/p/dra.sock",
                                        "/reg/gpu-reg.sock")),
            "deregistered gpu.nvidia.com (endpoint /p/dra.sock, socket "
            "/reg/gpu-reg.sock)");
  EXPECT_EQ(
      EventText(PluginErrorEvent("/reg/x.sock", "GetInfo", "UNAVAILABLE: down",
                                 absl::Milliseconds(500))),
      "plugin_error /reg/x.sock: GetInfo: UNAVAILABLE: down (retry in "
      "500 ms)");
  EXPECT_EQ(EventText(DraListeningEvent("/reg")),
            "listening for DRA plugins in /reg");
  EXPECT_EQ(EventText(PluginFoundEvent("/reg/x.sock")),
            "plugin_found /reg/x.sock");
}

TEST(DraEventsTest, Drivers) {
  EXPECT_EQ(EventText(DriversEvent({})), "drivers: none registered");
  Json e = DriversEvent({{"gpu.nvidia.com", "/p/old.sock", "/reg/a.sock",
                          DraApi::kV1beta1, false, false},
                         {"gpu.nvidia.com", "/p/new.sock", "/reg/b.sock",
                          DraApi::kV1, true, true}});
  EXPECT_EQ(e.dump(),
            R"({"event":"drivers","drivers":[{"driver":"gpu.nvidia.com",)"
            R"("endpoint":"/p/old.sock","socket":"/reg/a.sock",)"
            R"("api":"v1beta1","health":false,"in_use":false},)"
            R"({"driver":"gpu.nvidia.com","endpoint":"/p/new.sock",)"
            R"("socket":"/reg/b.sock","api":"v1","health":true,)"
            R"("in_use":true}]})");
  EXPECT_EQ(EventText(e),
            "drivers: 2 registrations\n"
            "  gpu.nvidia.com: /p/old.sock (api v1beta1, socket /reg/a.sock, "
            "superseded)\n"
            "  gpu.nvidia.com: /p/new.sock (api v1, health, socket "
            "/reg/b.sock)");
}

TEST(DraEventsTest, OtherEventsAsEventText) {
  EXPECT_EQ(EventText(CommandErrorEvent("frob", "usage")),
            "command_error \"frob\": usage");
}

TEST(DraEventPrinterTest, OneLinePerEvent) {
  std::ostringstream text;
  std::ostringstream json;
  EventPrinter(&text, OutputFormat::kText)
      .Emit(PluginFoundEvent("/reg/x.sock"));
  EventPrinter(&json, OutputFormat::kJson)
      .Emit(PluginFoundEvent("/reg/x.sock"));
  EXPECT_EQ(text.str(), "plugin_found /reg/x.sock\n");
  EXPECT_EQ(json.str(), R"({"event":"plugin_found","socket":"/reg/x.sock"})"
                        "\n");
}

}  // namespace
}  // namespace gdp::dpctl
