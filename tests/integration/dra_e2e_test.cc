// The DRA side end to end: registration with the kubelet's plugin watcher,
// ResourceSlices on the API server (validated by the emulator), and
// NodePrepareResources / NodeUnprepareResources with CDI specs per claim.
#include <signal.h>

#include <fstream>
#include <map>
#include <tuple>

#include "cdi/validate.h"
#include "tests/integration/dra_fixture.h"
#include "util/file_watcher.h"

namespace gdp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> Keys(const std::map<std::string, json>& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

TEST_F(DraTest, RegistersPublishesPreparesAndUnprepares) {
  StartApiServer();
  StartDraKubelet();
  StartDraPlugin();
  json reg = Registered();
  EXPECT_EQ(reg["driver"], kDriver);
  EXPECT_EQ(reg["endpoint"],
            (dir_ / "plugins" / kDriver / "dra.sock").string());
  EXPECT_EQ(reg["api"], "v1");
  EXPECT_EQ(reg["versions"], json({"v1.DRAPlugin", "v1beta1.DRAPlugin",
                                   "v1alpha1.DRAResourceHealth"}));
  ASSERT_TRUE(WaitForDevices(8)) << plugin_->Stderr();
  std::vector<json> slices = Slices();
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["spec"]["driver"], kDriver);
  EXPECT_EQ(slices[0]["spec"]["nodeName"], kNode);
  EXPECT_EQ(slices[0]["spec"]["pool"]["name"], kNode);
  EXPECT_EQ(slices[0]["spec"]["pool"]["resourceSliceCount"], 1);
  EXPECT_EQ(slices[0]["metadata"]["ownerReferences"][0]["name"], kNode);
  std::map<std::string, json> devices = SliceDevices();
  EXPECT_THAT(Keys(devices), ElementsAre("gpu-0", "gpu-1", "gpu-2", "gpu-3",
                                         "gpu-4", "gpu-5", "gpu-6", "gpu-7"));
  const json& a = devices["gpu-5"]["attributes"];
  EXPECT_EQ(a["type"]["string"], "gpu");
  EXPECT_EQ(a["productName"]["string"], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(a["brand"]["string"], "Nvidia");
  EXPECT_EQ(a["architecture"]["string"], "Ampere");
  EXPECT_EQ(a["cudaComputeCapability"]["version"], "8.0.0");
  EXPECT_EQ(a["driverVersion"]["version"], "550.54.15");
  EXPECT_EQ(a["cudaDriverVersion"]["version"], "12.4.0");
  EXPECT_EQ(a["resource.kubernetes.io/pciBusID"]["string"], "0000:90:00.0");
  EXPECT_TRUE(a.contains("resource.kubernetes.io/pcieRoot"));
  EXPECT_EQ(a["resource.kubernetes.io/numaNode"]["int"], 1);
  // The DGX A100's NVSwitch fabric: one NVLink domain for all eight.
  EXPECT_EQ(a["gpu.nvidia.com/nvlinkDomain"],
            devices["gpu-0"]["attributes"]["uuid"]);
  EXPECT_EQ(devices["gpu-5"]["capacity"]["memory"]["value"], "80Gi");
  EXPECT_EQ(Violations(), json::array());

  const std::string uid = CreateClaim("one", {Result("gpu-1")});
  json prepared = KubeletCall("prepare - ns/one/" + uid);
  ASSERT_EQ(prepared.value("event", ""), "prepare") << prepared.dump();
  const json& c = prepared["claims"][uid];
  EXPECT_EQ(c.value("error", ""), "") << c.dump();
  ASSERT_EQ(c["devices"].size(), 1u);
  EXPECT_EQ(c["devices"][0]["device"], "gpu-1");
  EXPECT_EQ(c["devices"][0]["pool"], kNode);
  EXPECT_EQ(c["devices"][0]["requests"], json({"gpu"}));
  EXPECT_EQ(c["devices"][0]["cdi_ids"],
            json({absl::StrCat("k8s.gpu.nvidia.com/claim=", uid, "-gpu-1")}));
  json spec = json::parse(ReadFileOrEmpty(SpecPath(uid)), nullptr, false);
  ASSERT_TRUE(spec.is_object()) << SpecPath(uid);
  EXPECT_TRUE(cdi::ValidateSpec(spec).ok()) << cdi::ValidateSpec(spec);
  EXPECT_EQ(spec["kind"], "k8s.gpu.nvidia.com/claim");
  EXPECT_EQ(spec["devices"][0]["name"], absl::StrCat(uid, "-gpu-1"));
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"],
            "/dev/nvidia1");
  EXPECT_EQ(spec["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidiactl");

  // Again (the kubelet retries): the same answer.
  json again = KubeletCall("prepare - ns/one/" + uid);
  EXPECT_EQ(again["claims"][uid], c);

  json un = KubeletCall("unprepare - ns/one/" + uid);
  ASSERT_EQ(un.value("event", ""), "unprepare") << un.dump();
  EXPECT_EQ(un["claims"][uid].value("error", ""), "");
  EXPECT_FALSE(fs::exists(SpecPath(uid)));
  un = KubeletCall("unprepare - ns/one/" + uid);
  EXPECT_EQ(un["claims"][uid].value("error", ""), "");

  // SIGTERM: quick, sockets gone, slices kept for the kubelet to judge.
  plugin_->Signal(SIGTERM);
  EXPECT_EQ(plugin_->Wait(absl::Seconds(5)), 0) << plugin_->Stderr();
  EXPECT_FALSE(fs::exists(dir_ / "reg" / "gpu.nvidia.com-reg.sock"));
  EXPECT_FALSE(fs::exists(dir_ / "plugins" / kDriver / "dra.sock"));
}

TEST_F(DraTest, V1beta1KubeletAndEachBadClaimAlone) {
  StartApiServer();
  StartDraKubelet({"--api", "v1beta1"});
  StartDraPlugin();
  EXPECT_EQ(Registered()["api"], "v1beta1");
  ASSERT_TRUE(WaitForDevices(8));
  struct Case {
    std::string name;
    json results;
    const char* error;
  };
  const std::vector<Case> cases = {
      {"other-pool",
       {Result("gpu-0", "gpu", kDriver, "node-2")},
       "of pool node-2, not of this node's pool node-1"},
      {"other-driver",
       {Result("eth0", "gpu", "net.example.com")},
       "no device of driver gpu.nvidia.com"},
      {"unallocated", json::array(), "is not allocated"},
      {"unknown-device", {Result("gpu-9")}, "device gpu-9, which pool node-1"},
  };
  const std::string good = CreateClaim("good", {Result("gpu-2")});
  std::string command = "prepare - ns/good/" + good;
  std::map<std::string, std::string> uids;
  for (const Case& c : cases) {
    uids[c.name] = CreateClaim(c.name, c.results);
    absl::StrAppend(&command, " ns/", c.name, "/", uids[c.name]);
  }
  json out = KubeletCall(command);
  ASSERT_EQ(out.value("event", ""), "prepare") << out.dump();
  EXPECT_EQ(out["api"], "v1beta1");
  EXPECT_EQ(out["claims"][good].value("error", ""), "");
  EXPECT_EQ(out["claims"][good]["devices"][0]["device"], "gpu-2");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const json& r = out["claims"][uids[c.name]];
    EXPECT_THAT(r.value("error", ""), HasSubstr(c.error));
    EXPECT_THAT(r.value("error", ""), HasSubstr("claim ns/" + c.name));
    EXPECT_FALSE(fs::exists(SpecPath(uids[c.name])));
  }
  EXPECT_TRUE(fs::exists(SpecPath(good)));
  EXPECT_THAT(out["missing"], IsEmpty());
}

TEST_F(DraTest, KubeletRestartAndRemovedSockets) {
  StartApiServer();
  StartDraPlugin();  // the kubelet is not there yet
  ASSERT_TRUE(WaitForDevices(8));
  StartDraKubelet();
  Registered();
  // A kubelet restart finds the socket again and registers anew.
  dra_kubelet_.reset();
  StartDraKubelet();
  Registered();
  // Our sockets removed: served again, so the kubelet registers again.
  fs::remove(dir_ / "reg" / "gpu.nvidia.com-reg.sock");
  json e = NextEvent(*dra_kubelet_, "deregistered", absl::Seconds(10));
  EXPECT_FALSE(e.is_null());
  Registered();
  fs::remove_all(dir_ / "plugins");
  Registered();
  EXPECT_TRUE(fs::exists(dir_ / "plugins" / kDriver / "dra.sock"));
  const std::string uid = CreateClaim("c", {Result("gpu-0")});
  EXPECT_EQ(
      KubeletCall("prepare - ns/c/" + uid)["claims"][uid].value("error", "?"),
      "");
}

TEST_F(DraTest, PluginRestartAndRebootKeepPreparedClaims) {
  StartApiServer();
  StartDraKubelet();
  StartDraPlugin();
  Registered();
  const std::string uid = CreateClaim("kept", {Result("gpu-3")});
  json first = KubeletCall("prepare - ns/kept/" + uid);
  ASSERT_EQ(first["claims"][uid].value("error", "?"), "");
  const std::string spec = ReadFileOrEmpty(SpecPath(uid));

  // A plugin restart: the claim is known (even with the claim gone from the
  // API server), Unprepare removes its spec.
  plugin_->Signal(SIGTERM);
  ASSERT_EQ(plugin_->Wait(absl::Seconds(5)), 0);
  ASSERT_TRUE(api_client_
                  ->Delete("/apis/resource.k8s.io/v1/namespaces/ns/"
                           "resourceclaims/kept")
                  .ok());
  StartDraPlugin();
  Registered();
  json again = KubeletCall("prepare - ns/kept/" + uid);
  EXPECT_EQ(again["claims"][uid], first["claims"][uid]);

  // A reboot: a new boot ID and an empty /var/run/cdi; the spec is back.
  plugin_->Signal(SIGTERM);
  ASSERT_EQ(plugin_->Wait(absl::Seconds(5)), 0);
  fs::remove_all(dir_ / "cdi");
  SetBootId("boot-2");
  StartDraPlugin();
  Registered();
  EXPECT_EQ(ReadFileOrEmpty(SpecPath(uid)), spec);
  EXPECT_EQ(KubeletCall("unprepare - ns/kept/" + uid)["claims"][uid].value(
                "error", "?"),
            "");
  EXPECT_FALSE(fs::exists(SpecPath(uid)));
}

TEST_F(DraTest, CorruptCheckpointIsReportedNotFatal) {
  StartApiServer();
  fs::create_directories(dir_ / "plugins" / kDriver);
  std::ofstream(dir_ / "plugins" / kDriver / "gdp-checkpoint.json")
      << "{\"kind\": \"gpu-device-plugin/dra-checkpoint\", \"version\": 1";
  StartDraKubelet();
  StartDraPlugin();
  Registered();
  ASSERT_TRUE(WaitForDevices(8));
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("gdp-checkpoint.json: not valid"));
  const std::string uid = CreateClaim("c", {Result("gpu-0")});
  EXPECT_EQ(
      KubeletCall("prepare - ns/c/" + uid)["claims"][uid].value("error", "?"),
      "");
}

// NVIDIA's --feature-gates=ConsumableShares=true --consumable-shares: on an
// R615 machine with cgroup v2, each GPU in NVIDIA's shape, accepted by
// 1.36's rules; on an older driver, whole GPUs saying why.
TEST_F(DraTest, ConsumableShares) {
  struct Case {
    const char* machine;
    bool shared;
  } cases[] = {{"hgx-h100-r615", true}, {"dgx-a100", false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.machine);
    MakeRoot(c.machine);
    SetBootId("boot-1");
    fs::create_directories(dir_ / "root" / "proc" / "self");
    std::ofstream(dir_ / "root" / "proc" / "self" / "mountinfo")
        << "35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
    StartApiServer(0, {"--kube-version", "1.36"});
    StartDraKubelet();
    StartDraPlugin(
        {"--feature-gates=ConsumableShares=true", "--consumable-shares=4"},
        c.machine);
    Registered();
    ASSERT_TRUE(WaitForDevices(8)) << plugin_->Stderr();
    std::map<std::string, json> devices = SliceDevices();
    ASSERT_TRUE(devices.contains("gpu-0")) << json(Keys(devices)).dump();
    const json& d = devices["gpu-0"];
    EXPECT_EQ(d["attributes"]["gpu.nvidia.com/memoryLimits"]["string"],
              c.shared ? "enforced" : "none");
    EXPECT_EQ(d.value("allowMultipleAllocations", false), c.shared);
    EXPECT_EQ(d["capacity"].contains("shares"), c.shared);
    if (c.shared) {
      EXPECT_EQ(d["capacity"]["shares"]["requestPolicy"],
                json::parse(R"({"default": "1", "validRange":
                              {"min": "1", "max": "4", "step": "1"}})"));
      const json& range = d["capacity"]["memory"]["requestPolicy"];
      EXPECT_EQ(range["default"], "0");
      EXPECT_EQ(range["validRange"]["step"], "1Mi");
      EXPECT_EQ(range["validRange"]["max"], d["capacity"]["memory"]["value"]);
      // Two claims, each a share of gpu-0: each its own CDI device with its
      // limit, answered with its share ID; unpreparing one keeps the other.
      std::map<std::string, std::string> uids;  // share ID -> claim UID
      for (auto [name, share, memory] :
           {std::tuple<const char*, const char*, const char*>{
                "share-a", "a0000000-0000-0000-0000-000000000000", "4Gi"},
            {"share-b", "b0000000-0000-0000-0000-000000000000", "2Gi"}}) {
        json r = Result("gpu-0");
        r["shareID"] = share;
        r["consumedCapacity"] = {{"memory", memory}, {"shares", "1"}};
        uids[share] = CreateClaim(name, {r});
        json prepared =
            KubeletCall(absl::StrCat("prepare - ns/", name, "/", uids[share]));
        const json& got = prepared["claims"][uids[share]];
        ASSERT_EQ(got.value("error", ""), "") << prepared.dump();
        EXPECT_EQ(got["devices"][0]["share_id"], share);
        const std::string cdi_name =
            absl::StrCat(uids[share], "-gpu-0-share-", share);
        EXPECT_EQ(got["devices"][0]["cdi_ids"],
                  json({absl::StrCat("k8s.gpu.nvidia.com/claim=", cdi_name)}));
        json spec =
            json::parse(ReadFileOrEmpty(SpecPath(uids[share])), nullptr, false);
        ASSERT_TRUE(spec.is_object());
        EXPECT_TRUE(cdi::ValidateSpec(spec).ok()) << cdi::ValidateSpec(spec);
        EXPECT_EQ(spec["devices"][0]["name"], cdi_name);
        const json& args =
            spec["devices"][0]["containerEdits"]["hooks"][0]["args"];
        EXPECT_EQ(args.back(),
                  absl::StrCat(uids[share], "-", share, ",",
                               devices["gpu-0"]["attributes"]["uuid"]["string"]
                                   .get<std::string>(),
                               ",", std::string(memory) == "4Gi" ? 4096 : 2048))
            << spec.dump();
      }
      const std::string a = uids["a0000000-0000-0000-0000-000000000000"];
      const std::string b = uids["b0000000-0000-0000-0000-000000000000"];
      json un = KubeletCall(absl::StrCat("unprepare - ns/share-a/", a));
      EXPECT_EQ(un["claims"][a].value("error", ""), "");
      EXPECT_FALSE(fs::exists(SpecPath(a)));
      EXPECT_TRUE(fs::exists(SpecPath(b)));
    } else {
      EXPECT_THAT(plugin_->Stderr(),
                  HasSubstr("is published whole, without consumable shares: "
                            "driver 550.54.15 is older than R615"));
    }
    EXPECT_EQ(Violations(), json::array());
    dra_kubelet_.reset();
    plugin_.reset();
    api_client_.reset();
    api_.reset();
  }
}

TEST_F(DraTest, MigMachines) {
  struct Case {
    const char* machine;
    size_t devices;
    const char* mig_device;
    const char* profile;
  } cases[] = {
      {"h100-mig", 5, "gpu-0-mig-3g40gb-9-4", "3g.40gb"},
      {"hgx-h100-mig7", 56, "gpu-0-mig-1g10gb-19-0", "1g.10gb"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.machine);
    MakeRoot(c.machine);
    SetBootId("boot-1");
    StartApiServer();
    StartDraKubelet();
    StartDraPlugin({}, c.machine);
    Registered();
    ASSERT_TRUE(WaitForDevices(c.devices)) << plugin_->Stderr();
    std::map<std::string, json> devices = SliceDevices();
    ASSERT_TRUE(devices.contains(c.mig_device)) << json(Keys(devices)).dump();
    const json& d = devices[c.mig_device];
    EXPECT_EQ(d["attributes"]["type"]["string"], "mig");
    EXPECT_EQ(d["attributes"]["profile"]["string"], c.profile);
    EXPECT_TRUE(d["attributes"].contains("parentUUID"));
    EXPECT_TRUE(d["capacity"].contains("multiprocessors"));
    EXPECT_EQ(Violations(), json::array());
    const std::string uid = CreateClaim("mig", {Result(c.mig_device)});
    json out = KubeletCall("prepare - ns/mig/" + uid);
    ASSERT_EQ(out["claims"][uid].value("error", "?"), "") << out.dump();
    json spec = json::parse(ReadFileOrEmpty(SpecPath(uid)), nullptr, false);
    ASSERT_TRUE(spec.is_object());
    EXPECT_TRUE(cdi::ValidateSpec(spec).ok());
    const json& nodes = spec["devices"][0]["containerEdits"]["deviceNodes"];
    ASSERT_EQ(nodes.size(), 3u);
    EXPECT_EQ(nodes[0]["path"], "/dev/nvidia0");
    EXPECT_THAT(nodes[1]["path"].get<std::string>(),
                HasSubstr("/dev/nvidia-caps/nvidia-cap"));
    dra_kubelet_.reset();
    plugin_.reset();
    api_client_.reset();
    api_.reset();
    fs::remove_all(dir_ / "api");
    fs::remove_all(dir_ / "plugins");
    fs::remove_all(dir_ / "cdi");
  }
}

}  // namespace
}  // namespace gdp

namespace gdp {
namespace {

class DraHungApiTest : public DraTest {
 protected:
  // The emulator, a DRA kubelet whose calls have `call_timeout` seconds,
  // and the plugin, registered and published.
  void StartAll(const std::string& call_timeout) {
    StartApiServer();
    StartDraKubelet({"--call-timeout", call_timeout});
    StartDraPlugin();
    Registered();
    ASSERT_TRUE(WaitForDevices(8));
  }

  // Claims c0..c4 on gpu-0..gpu-4 in namespace ns, and an API server that
  // from now on accepts reads of them and never answers. Returns the
  // dra-kubelet command preparing all five; `uids` gets their UIDs.
  std::string FiveClaimsOnAHungApiServer(std::vector<std::string>& uids) {
    std::string command = "prepare -";
    for (int i = 0; i < 5; ++i) {
      const std::string name = absl::StrCat("c", i);
      uids.push_back(CreateClaim(name, {Result(absl::StrCat("gpu-", i))}));
      absl::StrAppend(&command, " ns/", name, "/", uids.back());
    }
    absl::StatusOr<json> fault = api_client_->Create(
        "/emulator/faults",
        {{"methods", {"GET"}},
         {"path_prefix",
          "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims"},
         {"delay_seconds", 120},
         {"count", -1}});
    EXPECT_TRUE(fault.ok()) << fault.status();
    return command;
  }
};

// An API server that accepts claim reads and never answers: each claim of
// a 5-claim prepare gets its own error before the kubelet's deadline; an
// unprepare sent meanwhile answers at once; a socket removed meanwhile is
// served again at once.
TEST_F(DraHungApiTest, HungApiServerAnswersEveryClaimInTime) {
  StartAll("8");
  std::vector<std::string> uids;
  const std::string command = FiveClaimsOnAHungApiServer(uids);

  const absl::Time start = absl::Now();
  dra_kubelet_->WriteLine(command);
  absl::SleepFor(absl::Seconds(1));
  // A second caller (the kubelet handles pods in parallel; its emulator
  // reads one command at a time).
  const std::string socket = (dir_ / "plugins" / kDriver / "dra.sock").string();
  Subprocess unprepare(
      SpawnOptions{.argv = {GDP_DPCTL_BIN, "dra", "unprepare", "--socket",
                            socket, "--json", "ns/other/uid-other"},
                   .stderr_path = (dir_ / "unprepare.err").string()});
  const absl::Time sent = absl::Now();
  EXPECT_EQ(unprepare.Wait(absl::Seconds(30)), 0)
      << unprepare.ReadAll(absl::Seconds(1));
  EXPECT_LT(absl::Now() - sent, absl::Seconds(1));

  // dra.sock removed with the prepare in flight: served again at once,
  // and the prepare's caller told at once.
  fs::remove(socket);
  const absl::Time removed = absl::Now();
  json prepared, again;
  while ((prepared.is_null() || again.is_null()) &&
         absl::Now() - removed < absl::Seconds(30)) {
    json e = NextEventWhere(
        *dra_kubelet_,
        [](const json& e) {
          const std::string ev = e.value("event", "");
          return ev == "prepare" || ev == "prepare_failed" ||
                 ev == "registered";
        },
        absl::Seconds(30));
    if (e.is_null()) break;
    (e["event"] == "registered" ? again : prepared) = e;
  }
  ASSERT_FALSE(again.is_null()) << plugin_->Stderr();
  ASSERT_FALSE(prepared.is_null()) << plugin_->Stderr();
  EXPECT_LT(absl::Now() - removed, absl::Seconds(3));
  EXPECT_LT(absl::Now() - start, absl::Seconds(8)) << prepared.dump();
  // Its claims were never prepared.
  for (const std::string& uid : uids) EXPECT_FALSE(fs::exists(SpecPath(uid)));
}

// The same prepare with nothing else going on: every claim answered with
// its own error inside the deadline, not DEADLINE_EXCEEDED for the call.
TEST_F(DraHungApiTest, HungApiServerEachClaimItsOwnError) {
  StartAll("5");
  std::vector<std::string> uids;
  const std::string command = FiveClaimsOnAHungApiServer(uids);
  const absl::Time start = absl::Now();
  json out = KubeletCall(command);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ASSERT_EQ(out.value("event", ""), "prepare") << out.dump();
  for (const std::string& uid : uids) {
    EXPECT_THAT(out["claims"][uid].value("error", ""),
                HasSubstr("reading the claim"))
        << out.dump();
  }
  EXPECT_THAT(out["missing"], IsEmpty());
  // Nothing was prepared: the kubelet asks again.
  for (const std::string& uid : uids) EXPECT_FALSE(fs::exists(SpecPath(uid)));
}

}  // namespace
}  // namespace gdp
