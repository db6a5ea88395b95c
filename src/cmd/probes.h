// What /healthz and /readyz answer, from what the daemon reports: pure
// functions, so the rules are tested apart from the HTTP server.
#ifndef GDP_CMD_PROBES_H_
#define GDP_CMD_PROBES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "config/config.h"
#include "device/gpu.h"
#include "device/memory_limit_support.h"
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

// What a passing /readyz adds, one line each, when consumable shares are on
// (`shares_on`): for every GPU of `dra_gpus` (the DRA side's) that cannot
// enforce memory limits by `node` (NodeMemoryLimitSupport), what was
// published and why. With kRefuse: "GPU 0 (GPU-...) is published whole,
// without consumable shares: <reason> (--unenforced-shares=allow shares it
// unenforced)"; with kAllow: "GPU 0 (GPU-...) offers consumable shares
// whose memory limits are not enforced: <reason>". Empty when shares are
// off or every GPU can enforce. A MIG-enabled GPU stands for its MIG
// devices.
std::vector<std::string> SharesNotes(bool shares_on,
                                     UnenforcedShares unenforced,
                                     const MemoryLimitSupport& node,
                                     const NodeGpus& dra_gpus);

}  // namespace gdp

#endif  // GDP_CMD_PROBES_H_
