// End to end: the MIG layout changes under the running daemon (another
// process makes and destroys MIG instances through the fake NVML's shared
// MIG state, as `nvidia-smi mig` would) and both APIs follow it at the
// next rediscovery (--rediscover-interval): the device plugin with the
// mixed strategy (kubelet emulator) and DRA (API server emulator and the
// kubelet's DRA side). Devices that are gone are refused.
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "tests/integration/dra_fixture.h"

namespace gdp {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kFast = {"--rediscover-interval=200ms",
                                        "--health-probe-interval=100ms"};

// Runs `fake-nvml mig ARGS` against the test's machine and MIG state (beside
// its control file); fails the test unless it succeeds.
void Mig(const std::string& control, const std::string& machine,
         std::vector<std::string> args) {
  std::vector<std::string> argv = {GDP_FAKE_NVML_TOOL, "mig", "--machine",
                                   Machine(machine)};
  argv.insert(argv.end(), args.begin(), args.end());
  const fs::path state = fs::path(control).parent_path() / "mig-state";
  argv.insert(argv.end(), {"--state", state.string()});
  Subprocess p({.argv = argv});
  std::string out;
  while (auto line = p.ReadLine(kTimeout)) out += *line + "\n";
  EXPECT_EQ(p.Wait(kTimeout).value_or(-1), 0)
      << absl::StrJoin(args, " ") << ": " << out << p.Stderr();
}

std::vector<std::string> Keys(const std::map<std::string, json>& m) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : m) keys.push_back(k);
  return keys;
}

// The IDs of a devices event.
std::set<std::string> Ids(const json& devices) {
  std::set<std::string> ids;
  for (const json& d : devices["devices"]) ids.insert(d["id"]);
  return ids;
}

class MigLiveTest : public DraTest {};

TEST_F(MigLiveTest, DevicePluginMixedFollowsInstancesMadeAndDestroyed) {
  // h100-mig GPU 0: 2g.20gb (GPU instance 3, slices 0-1), 1g.10gb (9 at
  // 2, 10 at 3), 3g.40gb (2 at 4-7); GPU 1 MIG off.
  MakeRoot("h100-mig");
  std::vector<std::string> args = {"--mig-strategy", "mixed", "--proc-root",
                                   (dir_ / "root" / "proc").string()};
  args.insert(args.end(), kFast.begin(), kFast.end());
  StartKubelet();
  StartPlugin(args, "h100-mig");
  std::map<std::string, std::string> endpoint;       // resource -> socket name
  std::map<std::string, std::set<std::string>> ids;  // its last device list
  // Reads the kubelet's events, noting registrations and device lists,
  // until `done` holds (false on timeout).
  auto until = [&](const std::function<bool()>& done) {
    if (done()) return true;
    json e = NextEventWhere(*kubelet_, [&](const json& e) {
      const std::string event = e.value("event", "");
      if (event == "register" && e.value("ok", false)) {
        endpoint[e["resource"]] = e["endpoint"];
      } else if (event == "devices") {
        ids[e["resource"]] = Ids(e);
      }
      return done();
    });
    return !e.is_null();
  };
  auto listed = [&](const std::string& resource, size_t n) {
    return [&, resource, n] {
      return endpoint.contains(resource) && ids.contains(resource) &&
             ids[resource].size() == n;
    };
  };
  ASSERT_TRUE(until(listed("nvidia.com/mig-1g.10gb", 2))) << plugin_->Stderr();
  ASSERT_TRUE(until(listed("nvidia.com/mig-3g.40gb", 1))) << plugin_->Stderr();
  const std::set<std::string> ones = ids["nvidia.com/mig-1g.10gb"];
  const std::set<std::string> threes = ids["nvidia.com/mig-3g.40gb"];
  ASSERT_EQ(ones.size(), 2u);

  // Another process destroys 1g.10gb GPU instance 9 (its compute instance
  // first, as NVML requires) and replaces the 3g.40gb with two 1g.20gb.
  const std::string control = ControlFile();
  Mig(control, "h100-mig", {"-i", "0", "--dci", "--gi", "9"});
  Mig(control, "h100-mig", {"-i", "0", "--dgi", "--gi", "9"});
  Mig(control, "h100-mig", {"-i", "0", "--dci", "--gi", "2"});
  Mig(control, "h100-mig", {"-i", "0", "--dgi", "--gi", "2"});
  Mig(control, "h100-mig", {"-i", "0", "--cgi", "1g.20gb:4,1g.20gb:6", "-C"});

  ASSERT_TRUE(until(listed("nvidia.com/mig-1g.10gb", 1))) << plugin_->Stderr();
  const std::set<std::string> one_left = ids["nvidia.com/mig-1g.10gb"];
  ASSERT_TRUE(ones.contains(*one_left.begin()));
  std::string removed;
  for (const std::string& id : ones) {
    if (!one_left.contains(id)) removed = id;
  }
  ASSERT_TRUE(until(listed("nvidia.com/mig-1g.20gb", 2))) << plugin_->Stderr();
  const std::set<std::string> twenties = ids["nvidia.com/mig-1g.20gb"];
  for (const std::string& id : twenties) {
    EXPECT_FALSE(ones.contains(id) || threes.contains(id)) << id;
  }
  EXPECT_THAT(plugin_->Stderr(), HasSubstr("The node's GPUs changed"));

  // The kubelet's allocations: the new devices are served, the removed
  // 1g.10gb is refused by its resource, and the 3g.40gb resource is gone.
  json a = AllocateFor("nvidia.com/mig-1g.20gb", 2, "p-new");
  ASSERT_EQ(a["event"], "allocate") << a.dump();
  auto [code, out] =
      DpctlAllocate({removed}, endpoint["nvidia.com/mig-1g.10gb"]);
  EXPECT_NE(code, 0) << out;
  EXPECT_THAT(out, HasSubstr("unknown device ID"));
  auto [code3, out3] =
      DpctlAllocate({*threes.begin()}, endpoint["nvidia.com/mig-3g.40gb"]);
  EXPECT_NE(code3, 0) << out3;
  auto [kept, kept_out] =
      DpctlAllocate({*one_left.begin()}, endpoint["nvidia.com/mig-1g.10gb"]);
  EXPECT_EQ(kept, 0) << kept_out;
}

TEST_F(MigLiveTest, DraPublishesTheNewLayoutAndRefusesRemovedDevices) {
  MakeRoot("h100-mig");
  SetBootId("boot-1");
  StartApiServer();
  StartDraKubelet();
  StartDraPlugin(kFast, "h100-mig");
  Registered();
  // 4 MIG devices and GPU 1.
  ASSERT_TRUE(WaitForDevices(5)) << plugin_->Stderr();
  ASSERT_TRUE(SliceDevices().contains("gpu-0-mig-1g10gb-19-2"));

  const std::string control = ControlFile();
  Mig(control, "h100-mig", {"-i", "0", "--dci", "--gi", "9"});
  Mig(control, "h100-mig", {"-i", "0", "--dgi", "--gi", "9"});
  Mig(control, "h100-mig", {"-i", "0", "--dci", "--gi", "2"});
  Mig(control, "h100-mig", {"-i", "0", "--dgi", "--gi", "2"});
  Mig(control, "h100-mig", {"-i", "0", "--cgi", "1g.20gb:4,1g.20gb:6", "-C"});

  // 2g.20gb, 1g.10gb at 3, two 1g.20gb, GPU 1.
  ASSERT_TRUE(WaitForSlices([&](const std::vector<json>&) {
    const std::map<std::string, json> d = SliceDevices();
    return d.size() == 5 && !d.contains("gpu-0-mig-1g10gb-19-2") &&
           !d.contains("gpu-0-mig-3g40gb-9-4");
  })) << json(Keys(SliceDevices())).dump()
      << plugin_->Stderr();
  std::map<std::string, json> devices = SliceDevices();
  std::vector<std::string> new_ones;
  for (const auto& [name, d] : devices) {
    if (d["attributes"].contains("profile") &&
        d["attributes"]["profile"]["string"] == "1g.20gb") {
      new_ones.push_back(name);
    }
  }
  ASSERT_EQ(new_ones.size(), 2u) << json(Keys(devices)).dump();
  EXPECT_EQ(Violations(), json::array());

  // A claim on a new device prepares; one on a removed device is refused.
  const std::string uid = CreateClaim("new", {Result(new_ones[0])});
  json out = KubeletCall("prepare - ns/new/" + uid);
  EXPECT_EQ(out["claims"][uid].value("error", "?"), "") << out.dump();
  const std::string gone =
      CreateClaim("gone", {Result("gpu-0-mig-3g40gb-9-4")});
  out = KubeletCall("prepare - ns/gone/" + gone);
  EXPECT_THAT(out["claims"][gone].value("error", ""),
              HasSubstr("gpu-0-mig-3g40gb-9-4"))
      << out.dump();
}

}  // namespace
}  // namespace gdp
