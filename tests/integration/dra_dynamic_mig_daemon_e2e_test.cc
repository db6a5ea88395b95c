// Dynamic MIG through the daemon: the real gpu-device-plugin with NVIDIA's
// DynamicMIG gate on the fake hgx-h100-mig7 node, the API server emulator
// as Kubernetes 1.36 allocating claims as the scheduler does (within the
// published counters), and the kubelet's DRA side (`dpctl dra-kubelet`):
// a prepare makes the allocated MIG instance in the fake NVML's shared MIG
// state and answers its CDI device (capability nodes by number), an
// unprepare destroys it; a plugin killed with SIGKILL and started again
// adopts the instance of a prepared claim and leaves the instances it did
// not make alone.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cdi/validate.h"
#include "tests/integration/dra_fixture.h"
#include "util/file_watcher.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

constexpr char kMachine[] = "hgx-h100-mig7";

class DraDynamicMigDaemonTest : public DraTest {
 protected:
  // `fake-nvml mig -i 0 ARGS` on the plugin's MIG state (beside its
  // control file); its output.
  std::string Mig(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        GDP_FAKE_NVML_TOOL, "mig",      "--machine", Machine(kMachine),
        "--state",          MigState(), "-i",        "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    Subprocess p({.argv = argv});
    std::string out;
    while (auto line = p.ReadLine(kTimeout)) out += *line + "\n";
    EXPECT_EQ(p.Wait(kTimeout).value_or(-1), 0)
        << absl::StrJoin(args, " ") << ": " << out << p.Stderr();
    return out;
  }
  std::string MigState() {
    return (fs::path(ControlFile()).parent_path() / "mig-state").string();
  }
  // GPU 0's GPU instances: "<profile>@<start>", in placement order.
  std::vector<std::string> Instances() {
    std::vector<std::string> out;
    for (absl::string_view line :
         absl::StrSplit(Mig({"--lgi"}), '\n', absl::SkipEmpty())) {
      // gpu 0 gi 2 profile 3g.40gb id 9 placement 4:4
      std::vector<std::string> w = absl::StrSplit(line, ' ');
      if (w.size() < 10) continue;
      out.push_back(absl::StrCat(
          w[5], "@", std::vector<std::string>(absl::StrSplit(w[9], ':'))[0]));
    }
    return out;
  }

  void Start() {
    StartDraPlugin(
        {"--feature-gates", "DynamicMIG=true", "--rediscover-interval=200ms"},
        kMachine);
    Registered();
    // 8 GPUs, each 25 profile placements.
    ASSERT_TRUE(WaitForDevices(8 * 25)) << plugin_->Stderr();
  }

  // Claim `name` allocated by the emulator as the scheduler would, one
  // device with `attributes`; its UID and device.
  std::pair<std::string, std::string> Allocate(const std::string& name,
                                               const json& attributes) {
    const std::string uid = CreateClaim(name, json::array());
    absl::StatusOr<json> done = api_client_->Create(
        "/emulator/allocate",
        {{"namespace", "ns"},
         {"name", name},
         {"driver", kDriver},
         {"requests", {{{"name", "gpu"}, {"attributes", attributes}}}}});
    EXPECT_TRUE(done.ok()) << done.status();
    if (!done.ok()) return {uid, ""};
    return {uid,
            (*done)["status"]["allocation"]["devices"]["results"][0]["device"]
                .get<std::string>()};
  }
};

TEST_F(DraDynamicMigDaemonTest, PrepareMakesUnprepareDestroysRestartAdopts) {
  MakeRoot(kMachine);
  SetBootId("boot-1");
  // GPU 0 empty but for one 1g.10gb at slice 6 that someone else made.
  Mig({"--dci"});
  Mig({"--dgi"});
  Mig({"--cgi", "1g.10gb:6", "-C"});
  ASSERT_EQ(Instances(), std::vector<std::string>{"1g.10gb@6"});
  StartApiServer(0, {"--kube-version", "1.36"});
  StartDraKubelet();
  Start();

  // The scheduler's first fit: the 3g.40gb at 0 (slices 0-3).
  auto [uid, device] = Allocate("big", {{"profile", "3g.40gb"}});
  ASSERT_EQ(device, "gpu-0-mig-3g40gb-9-0");
  json prepared = KubeletCall("prepare - ns/big/" + uid);
  ASSERT_EQ(prepared.value("event", ""), "prepare") << prepared.dump();
  const json& c = prepared["claims"][uid];
  ASSERT_EQ(c.value("error", ""), "") << c.dump() << plugin_->Stderr();
  EXPECT_EQ(
      c["devices"][0]["cdi_ids"],
      json({absl::StrCat("k8s.gpu.nvidia.com/claim=", uid, "-", device)}));
  EXPECT_EQ(Instances(), (std::vector<std::string>{"3g.40gb@0", "1g.10gb@6"}));
  json spec = json::parse(ReadFileOrEmpty(SpecPath(uid)), nullptr, false);
  ASSERT_TRUE(spec.is_object()) << SpecPath(uid);
  EXPECT_TRUE(cdi::ValidateSpec(spec).ok()) << cdi::ValidateSpec(spec);
  const json& nodes = spec["devices"][0]["containerEdits"]["deviceNodes"];
  ASSERT_EQ(nodes.size(), 3u) << nodes.dump();
  EXPECT_EQ(nodes[0]["path"], "/dev/nvidia0");
  for (int i : {1, 2}) {
    EXPECT_EQ(nodes[i]["type"], "c") << nodes.dump();
    EXPECT_EQ(nodes[i]["major"], 121) << nodes.dump();  // nvidia-caps
    EXPECT_THAT(nodes[i]["path"].get<std::string>(),
                HasSubstr("/dev/nvidia-caps/nvidia-cap"));
  }

  // Rediscovery (every 200 ms here) finds the instance made, which is no
  // change of the node (GPU 0's MIG devices are made on demand): nothing is
  // applied again, the published devices stay those of the partitionable
  // GPUs, the claim prepared.
  absl::SleepFor(absl::Milliseconds(600));
  EXPECT_THAT(plugin_->Stderr(),
              ::testing::Not(HasSubstr("The node's GPUs changed")));
  EXPECT_EQ(SliceDevices().size(), 8u * 25);

  // A claim of the placement of the instance someone else made (the
  // scheduler does not see it) fails, naming it, and destroys nothing.
  const std::string other =
      CreateClaim("other", {Result("gpu-0-mig-1g10gb-19-6")});
  json refused = KubeletCall("prepare - ns/other/" + other);
  EXPECT_THAT(refused["claims"][other].value("error", ""),
              HasSubstr("is occupied by GPU instance"))
      << refused.dump();
  EXPECT_EQ(Instances(), (std::vector<std::string>{"3g.40gb@0", "1g.10gb@6"}));

  // Killed and started again: the prepared claim's instance is adopted,
  // the other left alone.
  plugin_.reset();  // SIGKILL
  Start();
  EXPECT_EQ(Instances(), (std::vector<std::string>{"3g.40gb@0", "1g.10gb@6"}));
  const std::string log = ReadFileOrEmpty((dir_ / "plugin.err").string());
  EXPECT_THAT(log,
              HasSubstr(absl::StrCat("of claim ns/big (", uid, "): adopted")));
  EXPECT_THAT(log, HasSubstr("memory slices 6-6) is in no prepared claim of "
                             "this driver: not made by it, left alone"));
  json again = KubeletCall("prepare - ns/big/" + uid);
  EXPECT_EQ(again["claims"][uid].value("error", ""), "");

  json un = KubeletCall("unprepare - ns/big/" + uid);
  ASSERT_EQ(un.value("event", ""), "unprepare") << un.dump();
  EXPECT_EQ(un["claims"][uid].value("error", ""), "") << un.dump();
  EXPECT_EQ(Instances(), std::vector<std::string>{"1g.10gb@6"});
  EXPECT_FALSE(fs::exists(SpecPath(uid)));
  // Nor is the instance destroyed a change.
  absl::SleepFor(absl::Milliseconds(600));
  EXPECT_THAT(plugin_->Stderr(),
              ::testing::Not(HasSubstr("The node's GPUs changed")));
  EXPECT_EQ(Violations(), json::array());
}

}  // namespace
}  // namespace gdp
