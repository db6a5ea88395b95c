// What /healthz and /readyz answer, from what the daemon reports: pure
// functions, so the rules are tested apart from the HTTP server.
#ifndef GDP_CMD_PROBES_H_
#define GDP_CMD_PROBES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "plugin/manager.h"

namespace gdp {

// Live: OK unless NVML is failing (`nvml_failure` not empty, e.g. the
// health monitor's event wait fails) or some resource is not registered
// with a live kubelet: not registered, or registered with no ListAndWatch
// stream open (the kubelet holds one for as long as it lives).
// Result on failure: Unavailable, the message naming every problem.
absl::Status Liveness(const std::string& nvml_failure,
                      const std::vector<PluginStatus>& plugins);

// Ready: OK when every resource is registered with the kubelet.
// Result on failure: Unavailable naming the unregistered resources.
absl::Status Readiness(const std::vector<PluginStatus>& plugins);

}  // namespace gdp

#endif  // GDP_CMD_PROBES_H_
