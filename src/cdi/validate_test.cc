#include "cdi/validate.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace gdp::cdi {
namespace {

using nlohmann::json;

json GoodSpec() {
  return json::parse(R"({
    "cdiVersion": "0.5.0",
    "kind": "k8s.device-plugin.nvidia.com/gpu",
    "devices": [
      {"name": "GPU-8f6e3c1a-0000-1111-2222-333344445555",
       "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}},
      {"name": "1",
       "containerEdits": {"deviceNodes": [
         {"path": "/dev/nvidia1", "hostPath": "/run/nvidia/driver/dev/nvidia1"}]}},
      {"name": "0:1",
       "containerEdits": {"deviceNodes": [
         {"path": "/dev/nvidia0"}, {"path": "/dev/nvidia-caps/nvidia-cap21"}]}}
    ],
    "containerEdits": {
      "env": ["NVIDIA_VISIBLE_DEVICES=void"],
      "deviceNodes": [{"path": "/dev/nvidiactl"}],
      "mounts": [{"hostPath": "/usr/lib64/libcuda.so.550.54.15",
                  "containerPath": "/usr/lib64/libcuda.so.550.54.15",
                  "options": ["ro", "nosuid", "nodev", "bind"]}]
    }
  })");
}

TEST(ValidateSpecTest, AcceptsGoodSpecs) {
  struct Case {
    std::string name;
    std::function<void(json&)> edit;
  } cases[] = {
      {"as is", [](json&) {}},
      {"v-prefixed version", [](json& s) { s["cdiVersion"] = "v0.5.0"; }},
      {"newest version", [](json& s) { s["cdiVersion"] = "1.1.0"; }},
      {"no spec edits", [](json& s) { s.erase("containerEdits"); }},
      {"null spec edits", [](json& s) { s["containerEdits"] = nullptr; }},
      {"device with env only",
       [](json& s) {
         s["devices"][0]["containerEdits"] = {{"env", {"X=1"}}};
       }},
      {"empty env value", [](json& s) { s["containerEdits"]["env"] = {"X="}; }},
      {"device with a hook only",
       [](json& s) {
         s["devices"][0]["containerEdits"] = {
             {"hooks",
              {{{"hookName", "createRuntime"},
                {"path", "/usr/local/bin/hook"},
                {"args", {"hook", "apply"}},
                {"env", {"DEBUG=1"}},
                {"timeout", 30}}}}};
       }},
      {"hooks of every stage",
       [](json& s) {
         json hooks = json::array();
         for (const char* stage :
              {"prestart", "createRuntime", "createContainer", "startContainer",
               "poststart", "poststop"}) {
           hooks.push_back({{"hookName", stage}, {"path", "/bin/true"}});
         }
         s["containerEdits"]["hooks"] = hooks;
       }},
  };
  for (const Case& c : cases) {
    json spec = GoodSpec();
    c.edit(spec);
    EXPECT_TRUE(ValidateSpec(spec).ok())
        << c.name << ": " << ValidateSpec(spec);
  }
}

TEST(ValidateSpecTest, RefusesBadSpecsNamingTheField) {
  struct Case {
    std::string name;
    std::function<void(json&)> edit;
    std::string mentions;  // in the error message
  } cases[] = {
      {"not an object", [](json& s) { s = json::array(); }, "spec"},
      {"unknown field", [](json& s) { s["extra"] = 1; }, "'extra'"},
      {"no version", [](json& s) { s.erase("cdiVersion"); }, "cdiVersion"},
      {"version not a string", [](json& s) { s["cdiVersion"] = 5; },
       "cdiVersion"},
      {"unreleased version", [](json& s) { s["cdiVersion"] = "0.9.0"; },
       "'0.9.0'"},
      {"not semver", [](json& s) { s["cdiVersion"] = "latest"; }, "'latest'"},
      {"digit name below 0.5.0",
       [](json& s) {
         s["cdiVersion"] = "0.4.0";
         s["devices"][1]["containerEdits"]["deviceNodes"][0].erase("hostPath");
         s["devices"].erase(2);
       },
       "below 0.5.0"},
      {"hostPath below 0.5.0",
       [](json& s) {
         s["cdiVersion"] = "0.3.0";
         s["devices"][1]["name"] = "gpu1";
         s["devices"].erase(2);
       },
       "below 0.5.0"},
      {"dotted class below 0.6.0", [](json& s) { s["kind"] = "a.com/b.c"; },
       "below 0.6.0"},
      {"no kind", [](json& s) { s.erase("kind"); }, "kind"},
      {"kind without class", [](json& s) { s["kind"] = "vendor.com"; },
       "'vendor.com'"},
      {"kind with two slashes", [](json& s) { s["kind"] = "vendor.com/a/b"; },
       "invalid character '/'"},
      {"kind ending in slash", [](json& s) { s["kind"] = "vendor.com/"; },
       "'vendor.com/'"},
      {"vendor starting with digit", [](json& s) { s["kind"] = "1a.com/gpu"; },
       "start with a letter"},
      {"vendor with empty label", [](json& s) { s["kind"] = "a..com/gpu"; },
       "empty DNS label"},
      {"class ending with dash", [](json& s) { s["kind"] = "a.com/gpu-"; },
       "end with a letter or digit"},
      {"class too long",
       [](json& s) { s["kind"] = "a.com/g" + std::string(63, 'x'); },
       "longer than 63"},
      {"vendor too long",
       [](json& s) { s["kind"] = "a" + std::string(253, 'b') + "/gpu"; },
       "longer than 253"},
      {"no devices", [](json& s) { s.erase("devices"); }, "devices"},
      {"null devices", [](json& s) { s["devices"] = nullptr; }, "devices"},
      {"empty devices", [](json& s) { s["devices"] = json::array(); },
       "devices: is empty"},
      {"device not an object", [](json& s) { s["devices"][0] = "gpu"; },
       "devices[0]"},
      {"device without name", [](json& s) { s["devices"][0].erase("name"); },
       "devices[0].name"},
      {"device name with slash",
       [](json& s) { s["devices"][0]["name"] = "MIG-GPU-x/1/2"; },
       "devices[0].name"},
      {"device name ending in colon",
       [](json& s) { s["devices"][0]["name"] = "0:"; }, "'0:'"},
      {"device name starting with dash",
       [](json& s) { s["devices"][0]["name"] = "-a"; }, "'-a'"},
      {"empty device name", [](json& s) { s["devices"][0]["name"] = ""; },
       "empty"},
      {"duplicate device", [](json& s) { s["devices"][2]["name"] = "1"; },
       "devices[2].name: device '1' appears twice"},
      {"device without edits",
       [](json& s) { s["devices"][0].erase("containerEdits"); },
       "devices[0].containerEdits: is missing"},
      {"device with empty edits",
       [](json& s) { s["devices"][0]["containerEdits"] = json::object(); },
       "devices[0].containerEdits: edits nothing"},
      {"device unknown edit",
       [](json& s) { s["devices"][0]["containerEdits"]["devices"] = 1; },
       "'devices'"},
      {"env without =",
       [](json& s) { s["containerEdits"]["env"] = {"NVIDIA_VISIBLE_DEVICES"}; },
       "containerEdits.env[0]"},
      {"env with empty name",
       [](json& s) { s["containerEdits"]["env"] = {"=x"}; }, "'=x'"},
      {"env not strings", [](json& s) { s["containerEdits"]["env"] = {1}; },
       "containerEdits.env[0]"},
      {"relative node path",
       [](json& s) {
         s["devices"][2]["containerEdits"]["deviceNodes"][1]["path"] =
             "dev/nvidia-caps/nvidia-cap21";
       },
       "devices[2].containerEdits.deviceNodes[1].path"},
      {"node without path",
       [](json& s) { s["containerEdits"]["deviceNodes"][0].erase("path"); },
       "containerEdits.deviceNodes[0].path: is missing"},
      {"relative node host path",
       [](json& s) {
         s["containerEdits"]["deviceNodes"][0]["hostPath"] = "dev/nvidiactl";
       },
       "deviceNodes[0].hostPath"},
      {"node unknown field",
       [](json& s) { s["containerEdits"]["deviceNodes"][0]["mode"] = 1; },
       "'mode'"},
      {"mount without host path",
       [](json& s) { s["containerEdits"]["mounts"][0].erase("hostPath"); },
       "mounts[0].hostPath: is missing"},
      {"mount with empty host path",
       [](json& s) { s["containerEdits"]["mounts"][0]["hostPath"] = ""; },
       "mounts[0].hostPath: is empty"},
      {"mount without container path",
       [](json& s) { s["containerEdits"]["mounts"][0].erase("containerPath"); },
       "mounts[0].containerPath: is missing"},
      {"mount relative container path",
       [](json& s) {
         s["containerEdits"]["mounts"][0]["containerPath"] = "usr/lib";
       },
       "mounts[0].containerPath"},
      {"mount options not strings",
       [](json& s) { s["containerEdits"]["mounts"][0]["options"] = "ro"; },
       "mounts[0].options"},
      {"mounts not an array",
       [](json& s) { s["containerEdits"]["mounts"] = json::object(); },
       "containerEdits.mounts"},
      // CDI fields we never write are refused, whatever their content.
      {"hook stage unknown",
       [](json& s) {
         s["devices"][0]["containerEdits"]["hooks"] = {
             {{"hookName", "preStart"}, {"path", "/bin/true"}}};
       },
       "devices[0].containerEdits.hooks[0].hookName: 'preStart' is not an "
       "OCI hook stage"},
      {"hook without stage",
       [](json& s) {
         s["containerEdits"]["hooks"] = {{{"path", "/bin/true"}}};
       },
       "containerEdits.hooks[0].hookName: is missing"},
      {"hook without path",
       [](json& s) {
         s["containerEdits"]["hooks"] = {{{"hookName", "poststop"}}};
       },
       "hooks[0].path: is missing"},
      {"hook relative path",
       [](json& s) {
         s["containerEdits"]["hooks"] = {
             {{"hookName", "poststop"}, {"path", "bin/true"}}};
       },
       "hooks[0].path: 'bin/true' is not an absolute path"},
      {"hook args not strings",
       [](json& s) {
         s["containerEdits"]["hooks"] = {{{"hookName", "poststop"},
                                          {"path", "/bin/true"},
                                          {"args", {"true", 1}}}};
       },
       "hooks[0].args[1]: is not a string"},
      {"hook env not K=V",
       [](json& s) {
         s["containerEdits"]["hooks"] = {{{"hookName", "poststop"},
                                          {"path", "/bin/true"},
                                          {"env", {"=x"}}}};
       },
       "hooks[0].env[0]: '=x' is not NAME=VALUE"},
      {"hook timeout zero",
       [](json& s) {
         s["containerEdits"]["hooks"] = {
             {{"hookName", "poststop"}, {"path", "/bin/true"}, {"timeout", 0}}};
       },
       "hooks[0].timeout: is not above zero"},
      {"hook timeout negative",
       [](json& s) {
         s["containerEdits"]["hooks"] = {{{"hookName", "poststop"},
                                          {"path", "/bin/true"},
                                          {"timeout", -3}}};
       },
       "hooks[0].timeout: is not above zero"},
      {"hook timeout huge",
       [](json& s) {
         s["containerEdits"]["hooks"] = {{{"hookName", "poststop"},
                                          {"path", "/bin/true"},
                                          {"timeout", 1ull << 40}}};
       },
       "hooks[0].timeout: is too large"},
      {"hook timeout text",
       [](json& s) {
         s["containerEdits"]["hooks"] = {{{"hookName", "poststop"},
                                          {"path", "/bin/true"},
                                          {"timeout", "5"}}};
       },
       "hooks[0].timeout: is not an integer"},
      {"hook unknown field",
       [](json& s) {
         s["containerEdits"]["hooks"] = {{{"hookName", "poststop"},
                                          {"path", "/bin/true"},
                                          {"when", "always"}}};
       },
       "hooks[0]: unknown field 'when'"},
      {"intelRdt",
       [](json& s) {
         s["cdiVersion"] = "0.7.0";
         s["containerEdits"]["intelRdt"] = {{"closID", "gpu"}};
       },
       "unknown field 'intelRdt'"},
      {"additionalGids",
       [](json& s) {
         s["cdiVersion"] = "0.7.0";
         s["devices"][0]["containerEdits"]["additionalGids"] = {44};
       },
       "unknown field 'additionalGids'"},
      {"netDevices",
       [](json& s) {
         s["cdiVersion"] = "1.1.0";
         s["containerEdits"]["netDevices"] = {
             {{"hostInterfaceName", "eth1"}, {"name", "net0"}}};
       },
       "unknown field 'netDevices'"},
      {"annotations",
       [](json& s) {
         s["cdiVersion"] = "0.6.0";
         s["devices"][0]["annotations"] = {{"k", "v"}};
       },
       "devices[0]: unknown field 'annotations'"},
      {"node type",
       [](json& s) { s["containerEdits"]["deviceNodes"][0]["type"] = "x"; },
       "deviceNodes[0].type: must be \"c\", \"b\" or \"p\""},
      {"node major",
       [](json& s) { s["containerEdits"]["deviceNodes"][0]["major"] = -1; },
       "deviceNodes[0].major: must be a whole number, at least 0"},
      {"node minor",
       [](json& s) { s["containerEdits"]["deviceNodes"][0]["minor"] = "1"; },
       "deviceNodes[0].minor: must be a whole number"},
      {"mount type",
       [](json& s) { s["containerEdits"]["mounts"][0]["type"] = "bind"; },
       "unknown field 'type'"},
  };
  for (const Case& c : cases) {
    json spec = GoodSpec();
    c.edit(spec);
    absl::Status s = ValidateSpec(spec);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(s.message().find(c.mentions), std::string::npos)
        << c.name << ": " << s;
  }
}

TEST(ValidateNamesTest, Kinds) {
  for (const char* good : {"vendor.com/foo", "foo.bar.baz/foo-bar123.B_az",
                           "k8s.device-plugin.nvidia.com/gpu", "a/b"}) {
    EXPECT_TRUE(ValidateKind(good).ok()) << good << ValidateKind(good);
  }
  for (const char* bad :
       {"foo", "vendor.com/foo/", "vendor.com/foo/bar", "/gpu", "vendor.com/",
        "ven dor/gpu", "vendor.com/gp u", "-v.com/gpu", "v.com/_gpu"}) {
    EXPECT_EQ(ValidateKind(bad).code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(ValidateNamesTest, DeviceAndQualifiedNames) {
  for (const char* good : {"GPU-8f6e3c1a-0000-1111-2222-333344445555",
                           "MIG-5c89852c-d268-c3f3-1b07-005d5ae1dc3f", "0", "3",
                           "0:1", "a.b_c", "all"}) {
    EXPECT_TRUE(ValidateDeviceName(good).ok()) << good;
    std::string q = std::string("k8s.device-plugin.nvidia.com/gpu=") + good;
    EXPECT_TRUE(ValidateQualifiedName(q).ok()) << q;
  }
  for (const char* bad : {"", ":0", "0:", "GPU-x::", "a/b", "a b", "é"}) {
    EXPECT_FALSE(ValidateDeviceName(bad).ok()) << bad;
  }
  EXPECT_TRUE(ValidateDeviceName("GPU-x::1a").ok());  // ':' inside is fine
  for (const char* bad :
       {"gpu=0", "k8s.device-plugin.nvidia.com/gpu",
        "k8s.device-plugin.nvidia.com/gpu=", "=0", "nvidia.com/gpu/x=0"}) {
    EXPECT_FALSE(ValidateQualifiedName(bad).ok()) << bad;
  }
}

TEST(MinimumCdiVersionTest, NamesTheFeatureVersion) {
  json base = GoodSpec();
  base["devices"].erase(1);
  base["devices"].erase(1);
  EXPECT_EQ(MinimumCdiVersion(base), "0.3.0");
  json s = base;
  s["devices"][0]["name"] = "0";
  EXPECT_EQ(MinimumCdiVersion(s), "0.5.0");
  EXPECT_EQ(MinimumCdiVersion(GoodSpec()), "0.5.0");
  s = base;
  s["kind"] = "k8s.gpu.nvidia.com/claim.x";
  EXPECT_EQ(MinimumCdiVersion(s), "0.6.0");
  EXPECT_EQ(MinimumCdiVersion(json::array()), "0.3.0");
}

}  // namespace
}  // namespace gdp::cdi
