// The DRA side under change: health (taints and the health stream), the
// device plugin and DRA side by side, slices deleted behind our back, an
// API server that is down.
#include <signal.h>

#include "tests/integration/dra_fixture.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

// The taints of device `name` in the published slices.
json TaintsOf(const std::map<std::string, json>& devices,
              const std::string& name) {
  auto it = devices.find(name);
  if (it == devices.end()) return json();
  return it->second.value("taints", json::array());
}

// The health the kubelet's stream reports for `device`, from a health event.
std::string HealthOf(const json& event, const std::string& device) {
  for (const json& d : event.value("devices", json::array())) {
    if (d.value("device", "") == device) return d.value("health", "");
  }
  return "";
}

TEST_F(DraTest, XidTaintsTheDeviceUntilItRecovers) {
  StartApiServer();
  StartDraKubelet();
  // A quiet period long enough that the checks below, run slowly under
  // ASan on a loaded machine, still see the taint.
  StartDraPlugin(
      {"--health-quiet-period", "5s", "--health-probe-interval", "1s"});
  Registered();
  ASSERT_TRUE(WaitForDevices(8));
  json health = NextEvent(*dra_kubelet_, "health", absl::Seconds(10));
  ASSERT_FALSE(health.is_null()) << dra_kubelet_->Stderr();
  EXPECT_EQ(HealthOf(health, "gpu-3"), "Healthy");
  EXPECT_EQ(health["devices"][0]["pool"], kNode);

  Control("xid 3 32");  // PBDMA error: recoverable after a quiet period
  ASSERT_TRUE(WaitForSlices([&](const std::vector<json>&) {
    return !TaintsOf(SliceDevices(), "gpu-3").empty();
  })) << plugin_->Stderr();
  json taints = TaintsOf(SliceDevices(), "gpu-3");
  ASSERT_EQ(taints.size(), 1u);
  EXPECT_EQ(taints[0]["key"], "gpu.nvidia.com/xid");
  EXPECT_EQ(taints[0]["value"], "32");
  EXPECT_EQ(taints[0]["effect"], "NoSchedule");
  EXPECT_TRUE(TaintsOf(SliceDevices(), "gpu-2").empty());
  json unhealthy = NextEventWhere(*dra_kubelet_, [](const json& e) {
    return e.value("event", "") == "health" &&
           HealthOf(e, "gpu-3") == "Unhealthy";
  });
  ASSERT_FALSE(unhealthy.is_null());
  for (const json& d : unhealthy["devices"]) {
    if (d["device"] == "gpu-3") {
      EXPECT_THAT(d.value("message", ""), HasSubstr("XID 32"));
    }
  }
  // An unhealthy device is not prepared.
  const std::string uid = CreateClaim("c", {Result("gpu-3")});
  EXPECT_THAT(
      KubeletCall("prepare - ns/c/" + uid)["claims"][uid].value("error", ""),
      HasSubstr("device gpu-3 is unhealthy"));

  // After the quiet period the probe passes: the taint goes, health too.
  ASSERT_TRUE(WaitForSlices(
      [&](const std::vector<json>&) {
        return TaintsOf(SliceDevices(), "gpu-3").empty();
      },
      absl::Seconds(30)))
      << plugin_->Stderr();
  json healthy = NextEventWhere(
      *dra_kubelet_,
      [](const json& e) {
        return e.value("event", "") == "health" &&
               HealthOf(e, "gpu-3") == "Healthy";
      },
      absl::Seconds(20));
  EXPECT_FALSE(healthy.is_null());
  EXPECT_EQ(Violations(), json::array());
}

TEST_F(DraTest, LostGpuAndTaintsDroppedByTheApiServer) {
  // A cluster without DRADeviceTaints: the lost GPU is withheld instead.
  StartApiServer(0, {"--drop-taints"});
  StartDraKubelet({"--no-health"});
  StartDraPlugin({"--health-probe-interval", "1s"});
  Registered();
  ASSERT_TRUE(WaitForDevices(8));
  Control("lose 6");
  ASSERT_TRUE(WaitForDevices(7, absl::Seconds(20))) << plugin_->Stderr();
  EXPECT_FALSE(SliceDevices().contains("gpu-6"));
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("dropped the taints"));
  // The XID 79 the fake NVML queues first may have withheld it: coming
  // back counts as a reset only once the plugin has seen it lost.
  const absl::Time limit = absl::Now() + absl::Seconds(20);
  while (plugin_->Stderr().find("GPU lost") == std::string::npos &&
         absl::Now() < limit) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  Control("restore 6");
  EXPECT_TRUE(WaitForDevices(8, absl::Seconds(20))) << plugin_->Stderr();
}

TEST_F(DraTest, LostGpuTaint) {
  StartApiServer();
  StartDraKubelet({"--no-health"});
  StartDraPlugin({"--health-probe-interval", "1s"});
  Registered();
  ASSERT_TRUE(WaitForDevices(8));
  Control("lose 6");
  ASSERT_TRUE(WaitForSlices([&](const std::vector<json>&) {
    json t = TaintsOf(SliceDevices(), "gpu-6");
    return !t.empty() && t[0]["key"] == "gpu.nvidia.com/gpu-lost";
  })) << plugin_->Stderr();
  Control("restore 6");
  EXPECT_TRUE(WaitForSlices(
      [&](const std::vector<json>&) {
        return TaintsOf(SliceDevices(), "gpu-6").empty();
      },
      absl::Seconds(20)));
}

TEST_F(DraTest, SlicesDeletedBehindOurBackComeBackWithinASecond) {
  StartApiServer();
  StartDraPlugin();
  ASSERT_TRUE(WaitForDevices(8));
  for (int round = 0; round < 3; ++round) {
    // As the kubelet does at its start: delete every slice of the node.
    kube::ListOptions o;
    o.field_selector = absl::StrCat("spec.nodeName=", kNode);
    const absl::Time deleted = absl::Now();
    ASSERT_TRUE(api_client_->DeleteCollection(kSlices, o).ok());
    ASSERT_TRUE(WaitForDevices(8, absl::Seconds(5))) << plugin_->Stderr();
    // The benchmark (bench/dra_bench) measures how soon; here only that.
    (void)deleted;
  }
  // A slice changed by someone else is put right.
  std::vector<json> slices = Slices();
  ASSERT_EQ(slices.size(), 1u);
  json changed = slices[0];
  changed["spec"]["devices"].erase(0);
  ASSERT_TRUE(
      api_client_
          ->Update(absl::StrCat(kSlices, "/",
                                changed["metadata"]["name"].get<std::string>()),
                   changed)
          .ok());
  EXPECT_TRUE(WaitForDevices(8, absl::Seconds(5)));
  EXPECT_EQ(Violations(), json::array());
}

TEST_F(DraTest, ApiServerDownAtStartAndLaterBack) {
  const int port = FreePort();
  // Credentials and a kubeconfig for the port, before the server runs.
  StartApiServer(port);
  api_.reset();
  StartDraKubelet();
  StartDraPlugin();
  // The kubelet side does not wait for the API server.
  Registered();
  absl::SleepFor(absl::Seconds(1));
  EXPECT_EQ(plugin_->Wait(absl::ZeroDuration()), std::nullopt);
  StartApiServer(port);
  CreateNode();
  EXPECT_TRUE(WaitForDevices(8, absl::Seconds(15))) << plugin_->Stderr();
  // Down again and back: the slices are put back when it returns (the
  // emulator starts empty, as if the slices were deleted meanwhile), also
  // when the watch was in its backoff as the server went.
  api_.reset();
  absl::SleepFor(absl::Seconds(1));
  StartApiServer(port);
  CreateNode();
  EXPECT_TRUE(WaitForDevices(8, absl::Seconds(15))) << plugin_->Stderr();
}

TEST_F(DraTest, BothApisServeDisjointGpus) {
  const std::string config = WriteConfig(
      "version: v1\nflags:\n  deviceAPI: both\ndra:\n  devices: [\"0\", "
      "\"1\"]\n");
  StartApiServer();
  StartKubelet();
  StartDraKubelet();
  std::vector<std::string> args = DraArgs("both");
  args.erase(args.begin(), args.begin() + 2);  // the file says "both"
  args.insert(args.end(), {"--config-file", config});
  StartPlugin(args);
  json reg = NextEventFor("nvidia.com/gpu", "register");
  EXPECT_TRUE(reg.value("ok", false)) << plugin_->Stderr();
  json listed = NextEventFor("nvidia.com/gpu", "devices");
  EXPECT_EQ(listed["devices"].size(), 6u) << listed.dump();
  Registered();
  ASSERT_TRUE(WaitForDevices(2)) << plugin_->Stderr();
  std::map<std::string, json> devices = SliceDevices();
  EXPECT_TRUE(devices.contains("gpu-0"));
  EXPECT_TRUE(devices.contains("gpu-1"));
  for (const json& d : listed["devices"]) {
    for (const auto& [name, dev] : devices) {
      EXPECT_NE(d.value("id", ""),
                dev["attributes"]["uuid"]["string"].get<std::string>());
    }
  }
}

TEST_F(DraTest, OverlappingConfigIsRefusedNamingTheGpu) {
  // MIG strategy none offers GPU 0 whole; DRA would take its MIG device.
  MakeRoot("h100-mig");
  SetBootId("boot-1");
  const std::string config = WriteConfig(
      "version: v1\nflags:\n  deviceAPI: both\ndra:\n  devices: [\"0:1\"]\n");
  StartApiServer();
  std::vector<std::string> args = DraArgs("both");
  args.erase(args.begin(), args.begin() + 2);
  args.insert(args.end(), {"--config-file", config});
  StartPlugin(args, "h100-mig");
  EXPECT_EQ(plugin_->Wait(absl::Seconds(10)), 1);
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("GPU 0 ("));
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("MIG strategy none"));

  // Without dra.devices, both is refused at once (exit 2), naming it.
  const std::string missing =
      WriteConfig("version: v1\nflags:\n  deviceAPI: both\n");
  StartPlugin({"--config-file", missing, "--node-name", kNode, "--kubeconfig",
               (dir_ / "api" / "kubeconfig").string()},
              "h100-mig");
  EXPECT_EQ(plugin_->Wait(absl::Seconds(10)), 2);
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("dra.devices: must name the GPUs"));
}

}  // namespace
}  // namespace gdp
