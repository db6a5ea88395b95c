// The running plugin across config reloads: turns a validated Config and the
// node's GPUs into the resources the kubelet sees (one plugin each) and the
// CDI spec, and on reload changes only what the new config changes. Owns
// GPU health: one HealthTracker for its life (keyed by physical GPU, so
// health survives reloads and kubelet restarts) and the HealthMonitor
// thread that feeds it; every change is pushed into every resource. Owns
// the GPU topology every resource's GetPreferredAllocation reads: read
// through NVML on start and on every reload, and again on a health change
// while some GPU's links could not be read.
#ifndef GDP_CMD_DAEMON_H_
#define GDP_CMD_DAEMON_H_

#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "config/config.h"
#include "device/gpu.h"
#include "device/mig_caps.h"
#include "dra/driver.h"
#include "health/monitor.h"
#include "health/tracker.h"
#include "nvml/nvml.h"
#include "plugin/manager.h"
#include "topology/node_topology.h"

namespace gdp {

// Not thread-safe (but for Plugins and NvmlFailure): one thread starts,
// reloads and stops it.
class Daemon {
 public:
  // `nvml` must outlive the daemon. REQUIRES: Validate(config).ok().
  Daemon(const Nvml& nvml, Config config);

  // Stops the health monitor, then every plugin. A monitor blocked in an
  // NVML event wait is not waited for: it is kept (KeepUntilExit) and
  // still uses the Nvml, which must then be kept too, never destroyed.
  ~Daemon();

  // Builds the resources from `node`, writes the CDI spec (with a cdi-*
  // device list strategy), starts one plugin per resource and the health
  // monitor (unless health checks are disabled).
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

  // Thread-safe: what each running resource's plugin is doing now.
  std::vector<PluginStatus> Plugins() const { return manager_.Statuses(); }
  // Thread-safe: why the health monitor finds NVML failing, or "".
  std::string NvmlFailure() const { return health_.nvml_failure(); }
  // Thread-safe: what the DRA side is doing; absent when it does not run
  // (--device-api device-plugin).
  std::optional<dra::DraStatus> Dra() const;

 private:
  // Builds everything for `config` on `node` and applies it.
  absl::Status Apply(const Config& config, const NodeGpus& node)
      ABSL_LOCKS_EXCLUDED(health_mu_);
  // The DRA side for config_ (--device-api dra or both).
  absl::Status StartDra();
  // Sets every running resource's device health from the tracker.
  void PushHealth() ABSL_LOCKS_EXCLUDED(health_mu_);
  void PushHealthLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(health_mu_);
  // Reads the topology of `node` and makes it the one plugins use.
  void DiscoverTopologyLocked(std::shared_ptr<const NodeGpus> node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(health_mu_);

  const Nvml& nvml_;
  Config config_;
  NodeGpus node_;
  HealthTracker health_;
  // Held while the manager applies resources and while health is pushed:
  // a DeviceSet from PluginManager::Devices is valid until the next Apply.
  // Never held while calling a mutating HealthTracker method.
  absl::Mutex health_mu_;
  // What the topology was read from (health changes read it again).
  std::shared_ptr<const NodeGpus> topology_node_ ABSL_GUARDED_BY(health_mu_);
  const std::shared_ptr<SharedTopology> topology_;
  PluginManager manager_;  // guarded by health_mu_ for Apply
  // The DRA side, or null (device plugin only); Apply'd under health_mu_.
  std::unique_ptr<dra::DraDriver> dra_;
  // What the DRA side was last given (a topology change applies it again).
  NodeGpus dra_node_ ABSL_GUARDED_BY(health_mu_);
  std::optional<MigCaps> dra_caps_ ABSL_GUARDED_BY(health_mu_);
  std::unique_ptr<HealthMonitor> monitor_;
  std::thread monitor_thread_;
};

// What Allocate answers for `resource` under `config`.
AllocatorOptions AllocatorOptionsFor(const Config& config,
                                     const Resource& resource);

}  // namespace gdp

#endif  // GDP_CMD_DAEMON_H_
