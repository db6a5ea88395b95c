#include "dra_registration.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gdp::dpctl {
namespace {

constexpr char kSocket[] = "/reg/gpu.nvidia.com-reg.sock";
constexpr char kEndpoint[] = "/plugins/gpu.nvidia.com/dra.sock";

pluginregistration::PluginInfo Info(std::string type, std::string name,
                                    std::string endpoint,
                                    std::vector<std::string> versions) {
  pluginregistration::PluginInfo info;
  info.set_type(type);
  info.set_name(name);
  info.set_endpoint(endpoint);
  for (const std::string& v : versions) info.add_supported_versions(v);
  return info;
}

struct Case {
  const char* name;
  pluginregistration::PluginInfo info;
  KubeletApis apis;
  // Expected: the chosen API ("" none), health, endpoint, and the error
  // ("" none) exactly.
  std::string api;
  bool health;
  std::string endpoint;
  std::string error;
};

const std::vector<std::string> kAll = {"v1.DRAPlugin", "v1beta1.DRAPlugin",
                                       "v1alpha1.DRAResourceHealth"};
const KubeletApis kDefault;
const KubeletApis kOld{{DraApi::kV1beta1}, true};
const KubeletApis kNoHealth{{DraApi::kV1, DraApi::kV1beta1}, false};
const std::string kValidation =
    "RegisterPlugin error -- plugin validation failed with err: ";
const std::string kVersions = kValidation +
                              "invalid supported gRPC versions of DRA driver "
                              "plugin gpu.nvidia.com at endpoint " +
                              kEndpoint + ": ";

TEST(ValidatePluginInfoTest, Table) {
  const Case cases[] = {
      {"v1 first", Info("DRAPlugin", "gpu.nvidia.com", kEndpoint, kAll),
       kDefault, "v1", true, kEndpoint, ""},
      {"the plugin's order decides",
       Info("DRAPlugin", "gpu.nvidia.com", kEndpoint,
            {"v1beta1.DRAPlugin", "v1.DRAPlugin"}),
       kDefault, "v1beta1", false, kEndpoint, ""},
      {"older kubelet", Info("DRAPlugin", "gpu.nvidia.com", kEndpoint, kAll),
       kOld, "v1beta1", true, kEndpoint, ""},
      {"health off", Info("DRAPlugin", "gpu.nvidia.com", kEndpoint, kAll),
       kNoHealth, "v1", false, kEndpoint, ""},
      {"unknown entries skipped",
       Info(
           "DRAPlugin", "gpu.nvidia.com", kEndpoint,
           {"v2.DRAPlugin", "v1alpha1.DRAResourceHealth", "v1beta1.DRAPlugin"}),
       kDefault, "v1beta1", true, kEndpoint, ""},
      {"empty endpoint is the socket",
       Info("DRAPlugin", "gpu.nvidia.com", "", {"v1.DRAPlugin"}), kDefault,
       "v1", false, kSocket, ""},
      {"wrong type", Info("CSIPlugin", "gpu.nvidia.com", kEndpoint, kAll),
       kDefault, "", false, kEndpoint,
       std::string("RegisterPlugin error -- no handler registered for plugin "
                   "type: CSIPlugin at socket ") +
           kSocket},
      {"empty name", Info("DRAPlugin", "", kEndpoint, kAll), kDefault, "",
       false, kEndpoint, kValidation + "the DRA driver name is empty"},
      {"relative endpoint",
       Info("DRAPlugin", "gpu.nvidia.com", "dra.sock", kAll), kDefault, "",
       false, "dra.sock",
       kValidation +
           "endpoint \"dra.sock\" of DRA driver plugin gpu.nvidia.com is not "
           "an absolute path"},
      {"no versions", Info("DRAPlugin", "gpu.nvidia.com", kEndpoint, {}),
       kDefault, "", false, kEndpoint,
       kVersions +
           "empty list of supported gRPC services (aka supported versions)"},
      {"none known",
       Info("DRAPlugin", "gpu.nvidia.com", kEndpoint,
            {"v1alpha4.Node", "v1alpha1.DRAResourceHealth"}),
       kDefault, "", false, kEndpoint,
       kVersions +
           "none of services supported by the plugin ([\"v1alpha4.Node\" "
           "\"v1alpha1.DRAResourceHealth\"]) are supported by the kubelet "
           "([\"v1.DRAPlugin\" \"v1beta1.DRAPlugin\"])"},
      {"v1 only for an older kubelet",
       Info("DRAPlugin", "gpu.nvidia.com", kEndpoint, {"v1.DRAPlugin"}), kOld,
       "", false, kEndpoint,
       kVersions +
           "none of services supported by the plugin ([\"v1.DRAPlugin\"]) "
           "are supported by the kubelet ([\"v1beta1.DRAPlugin\"])"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RegistrationReport r = ValidatePluginInfo(kSocket, c.info, c.apis);
    EXPECT_EQ(r.error, c.error);
    EXPECT_EQ(r.api.has_value() ? ApiName(*r.api) : "", c.api);
    EXPECT_EQ(r.health, c.health);
    EXPECT_EQ(r.endpoint, c.endpoint);
    EXPECT_EQ(r.socket, kSocket);
    EXPECT_EQ(r.driver, c.info.name());
    EXPECT_EQ(r.versions.size(),
              static_cast<size_t>(c.info.supported_versions_size()));
  }
}

}  // namespace
}  // namespace gdp::dpctl
