// How the kubelet judges a DRA plugin's GetInfo answer: plugin type, driver
// name, endpoint and the DRAPlugin API version to use. Pure functions.
#ifndef GDP_DPCTL_DRA_REGISTRATION_H_
#define GDP_DPCTL_DRA_REGISTRATION_H_

#include <string>
#include <vector>

#include "dra_client.h"
#include "dra_events.h"
#include "pluginregistration/v1/api.pb.h"

namespace gdp::dpctl {

// PluginInfo.type of a DRA plugin.
inline constexpr char kDraPluginType[] = "DRAPlugin";
// The supported_versions entry of a plugin serving the health stream.
inline constexpr char kHealthService[] = "v1alpha1.DRAResourceHealth";

// What a kubelet knows.
struct KubeletApis {
  // The DRAPlugin versions it can call; the order does not matter (the
  // plugin's list decides).
  std::vector<DraApi> known = {DraApi::kV1, DraApi::kV1beta1};
  // Whether it follows the health stream of plugins that serve it.
  bool health = true;
};

// Judges `info`, read from the registration socket `socket`, as the kubelet
// does: the type must be "DRAPlugin", the name non-empty, the endpoint
// absolute (an empty one means `socket`), and supported_versions must list
// a DRAPlugin version in `apis.known`: the first such entry of the
// plugin's list is chosen. Returns a report with everything filled in that
// could be; `error` (the message Notify(false) carries, worded like the
// kubelet's) is empty when the plugin is acceptable, and then `api` is set.
RegistrationReport ValidatePluginInfo(
    const std::string& socket, const pluginregistration::PluginInfo& info,
    const KubeletApis& apis);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DRA_REGISTRATION_H_
