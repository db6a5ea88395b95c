// The running plugin across config reloads: turns a validated Config and the
// node's GPUs into the resources the kubelet sees (one plugin each) and the
// CDI spec, and on reload changes only what the new config changes.
#ifndef GDP_CMD_DAEMON_H_
#define GDP_CMD_DAEMON_H_

#include "absl/status/statusor.h"
#include "config/config.h"
#include "device/gpu.h"
#include "nvml/nvml.h"
#include "plugin/manager.h"

namespace gdp {

// Not thread-safe: one thread starts, reloads and stops it.
class Daemon {
 public:
  // `nvml` must outlive the daemon. REQUIRES: Validate(config).ok().
  Daemon(const Nvml& nvml, Config config);

  // Stops every plugin.
  ~Daemon();

  // Builds the resources from `node`, writes the CDI spec (with a cdi-*
  // device list strategy) and starts one plugin per resource.
  // Result on failure: what could not be built or written, naming it
  // (e.g. MIG single on a mixed node); nothing is served then.
  absl::Status Start(NodeGpus node);

  // Applies `loaded` (the config file read again with the same flags): the
  // GPUs are discovered again, resources rebuilt, and only resources whose
  // definition changed are restarted. A config that failed to load or that
  // cannot be applied is refused and the running config stays.
  // Result on failure: why it was refused (already logged).
  absl::Status Reload(const absl::StatusOr<Config>& loaded);

  const Config& config() const { return config_; }
  PluginManager& manager() { return manager_; }

 private:
  // Builds everything for `config` on `node` and applies it.
  absl::Status Apply(const Config& config, const NodeGpus& node);

  const Nvml& nvml_;
  Config config_;
  NodeGpus node_;
  PluginManager manager_;
};

// What Allocate answers for `resource` under `config`.
AllocatorOptions AllocatorOptionsFor(const Config& config,
                                     const Resource& resource);

}  // namespace gdp

#endif  // GDP_CMD_DAEMON_H_
