// What /healthz and /readyz answer, from what the daemon reports: pure
// functions, so the rules are tested apart from the HTTP server.
#ifndef GDP_CMD_PROBES_H_
#define GDP_CMD_PROBES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "plugin/manager.h"

namespace gdp {

// What the probes need of the DRA side (--device-api dra or both).
struct DraProbe {
  bool serving = false;     // its sockets are served
  bool registered = false;  // the kubelet registered it
  std::string registration_error;
  bool slices_in_sync = false;  // the ResourceSlices are published
  std::string slices_error;     // why publishing last failed
};

// Live: OK unless NVML is failing (`nvml_failure` not empty, e.g. the
// health monitor's event wait fails) or some resource is not registered
// with a live kubelet: not registered, or registered with no ListAndWatch
// stream open (the kubelet holds one for as long as it lives).
// The DRA side, when present, fails it only while its sockets are not
// served (the kubelet finds and registers a served plugin by itself, and an
// API server that is down is not cured by a restart).
// Result on failure: Unavailable, the message naming every problem.
absl::Status Liveness(const std::string& nvml_failure,
                      const std::vector<PluginStatus>& plugins,
                      const std::optional<DraProbe>& dra = std::nullopt);

// Ready: OK when every resource is registered with the kubelet, and the
// DRA side, when present, is registered and has published its slices.
// Result on failure: Unavailable naming what is not done.
absl::Status Readiness(const std::vector<PluginStatus>& plugins,
                       const std::optional<DraProbe>& dra = std::nullopt);

}  // namespace gdp

#endif  // GDP_CMD_PROBES_H_
