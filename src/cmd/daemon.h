// The running plugin across config reloads: turns a validated Config and the
// node's GPUs into the resources the kubelet sees (one plugin each) and the
// CDI spec, and on reload changes only what the new config changes. Owns
// GPU health for its life (a HealthService: the tracker, the state file
// and the monitor thread); every change is pushed into every resource.
// Owns the GPU topology every resource's GetPreferredAllocation reads:
// read through NVML on start and on every reload, and again on a health
// change while some GPU's links could not be read.
#ifndef GDP_CMD_DAEMON_H_
#define GDP_CMD_DAEMON_H_

#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cmd/gpu_layout.h"
#include "config/config.h"
#include "device/gpu.h"
#include "device/memory_limit_support.h"
#include "device/mig_caps.h"
#include "dra/driver.h"
#include "health/health_service.h"
#include "nvml/nvml.h"
#include "nvml/runner.h"
#include "plugin/manager.h"
#include "topology/node_topology.h"

namespace gdp {

// Not thread-safe (but for Plugins, NvmlFailure, Dra and CancelNvml): one
// thread (or callers holding one lock) starts, reloads, follows and stops
// it.
class Daemon {
 public:
  // `nvml` must outlive the daemon. REQUIRES: Validate(config).ok().
  // `state`: where health is kept across restarts (--state-dir) and this
  // boot's ID.
  Daemon(const Nvml& nvml, Config config, HealthStateOptions state);

  // Stops the health monitor, then every plugin. With NVML call deadlines
  // the monitor returns at once (its NVML work left on a runner's worker,
  // kept until exit); without, a monitor blocked in an NVML event wait is
  // not waited for but kept (KeepUntilExit). Either way what is kept still
  // uses the Nvml, which must then be kept too, never destroyed.
  ~Daemon();

  // Builds the resources from `node`, writes the CDI spec (with a cdi-*
  // device list strategy), starts one plugin per resource and the health
  // monitor (unless health checks are disabled). Health saved in the state
  // file by an earlier run in this boot is restored first (for the GPUs in
  // `node`), so the first device lists already carry it; from then on the
  // file follows every change of health.
  // Result on failure: what could not be built or written, naming it
  // (e.g. MIG single on a mixed node); nothing is served then.
  absl::Status Start(NodeGpus node);

  // Applies `loaded` (the config file read again with the same flags): the
  // GPUs are discovered again (GPUs and MIG devices NVML cannot describe
  // now stay as served, as in Follow: KeepUndescribed), resources rebuilt,
  // and only resources whose definition changed are restarted. A config that
  // failed to load or that cannot be applied is refused and the running config
  // stays; so is one whose discovery hit a hung NVML call (after its deadline).
  // Result on failure: why it was refused (already logged).
  absl::Status Reload(const absl::StatusOr<Config>& loaded);

  const Config& config() const { return config_; }

  // Discovers the GPUs again with the running config's sysfs root, through
  // the daemon's NVML runner (under call deadlines); the NUMA nodes and
  // PCIe roots of GPUs served now are not read again (DiscoverGpus).
  // Result on failure: the discovery's error, or the hang's (IsNvmlHang)
  // or Cancelled (CancelNvml).
  absl::StatusOr<NodeGpus> Discover();

  // Serves `found` (a Discover result; a served GPU or MIG device in a
  // slot it left out as unusable stays served: KeepUndescribed, as in
  // Reload) with the running config when
  // its layout (cmd/gpu_layout.h, compared as Layout() says) differs from
  // the one served, as Reload does:
  // only resources whose definition changed restart, a GPU new to
  // discovery counts as reset, the health monitor watches the new GPUs.
  // Logs the changes. Result: true when applied, false when the layout is
  // the same (nothing applied, nothing logged; MIG instances the DRA side
  // made or destroyed on demand since are only taken into the served node,
  // for the health monitor to watch); on failure why it could not be
  // served (the running resources are restored).
  absl::StatusOr<bool> Follow(NodeGpus found);

  // How Follow compares layouts: the served GPUs whose MIG devices the DRA
  // side makes on demand (MigMadeOnDemand of what the DRA side serves,
  // with Config::DynamicMigOn()); empty options without dynamic MIG.
  LayoutOptions Layout() ABSL_LOCKS_EXCLUDED(health_mu_);

  // Thread-safe: makes the NVML runner's discovery in progress, and every
  // later one (Discover, Reload, topology), fail Cancelled. For shutdown.
  void CancelNvml() { nvml_runner_.Cancel(); }

  // Reads the health state file again (SIGHUP): GPUs whose saved state the
  // operator cleared (`gpu-device-plugin health-state clear`) are made
  // healthy and their failures forgotten; then the file is rewritten with
  // the daemon's state if it differs.
  void ReloadHealthState();

  // Thread-safe: what each running resource's plugin is doing now.
  std::vector<PluginStatus> Plugins() const { return manager_.Statuses(); }
  // Thread-safe: why NVML counts as failing: the health monitor's reason,
  // then every NVML call about no GPU in particular hung now (past
  // --nvml-timeout); "" when none. A hung call about one GPU is not here:
  // it makes that GPU unhealthy instead.
  std::string NvmlFailure() const;
  // Thread-safe: what the DRA side is doing; absent when it does not run
  // (--device-api device-plugin).
  std::optional<dra::DraStatus> Dra() const;
  // Thread-safe: what a passing /readyz adds (SharesNotes: GPUs whose
  // memory limits cannot be enforced while consumable shares are on).
  std::vector<std::string> ReadinessNotes() const
      ABSL_LOCKS_EXCLUDED(notes_mu_);

 private:
  // Builds everything for `config` on `node` and applies it.
  absl::Status Apply(const Config& config, const NodeGpus& node)
      ABSL_LOCKS_EXCLUDED(health_mu_);
  // Makes `node`, just applied, the one served: GPUs new to discovery
  // count as reset, the health monitor watches `node`'s GPUs.
  void Adopt(NodeGpus node);
  // Discover with `sysfs_root`, and `known` as DiscoverGpus takes it.
  absl::StatusOr<NodeGpus> DiscoverWith(
      const std::string& sysfs_root,
      std::shared_ptr<const NodeGpus> known = nullptr);
  // The DRA side for config_ (--device-api dra or both).
  absl::Status StartDra();
  // Sets every running resource's device health from the tracker.
  void PushHealth() ABSL_LOCKS_EXCLUDED(health_mu_);
  void PushHealthLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(health_mu_);
  // Reads the topology of `node` and makes it the one plugins use.
  void DiscoverTopologyLocked(std::shared_ptr<const NodeGpus> node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(health_mu_);

  const Nvml& nvml_;
  // Discoveries after start-up (reload, topology) run here, under NVML call
  // deadlines; one at a time.
  NvmlRunner nvml_runner_;
  Config config_;
  NodeGpus node_;
  HealthService health_;
  // Held while the manager applies resources and while health is pushed:
  // a DeviceSet from PluginManager::Devices is valid until the next Apply.
  // Never held while calling HealthService's Restore, Follow or ReloadState
  // (their changes run the push, which takes it).
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
  // The node's part of memory-limit support, found when the DRA side
  // starts (the driver version comes with each Apply).
  MemoryLimitNode memory_limit_node_;
  mutable absl::Mutex notes_mu_;
  std::vector<std::string> readiness_notes_ ABSL_GUARDED_BY(notes_mu_);
};

// What Allocate answers for `resource` under `config`.
AllocatorOptions AllocatorOptionsFor(const Config& config,
                                     const Resource& resource);

}  // namespace gdp

#endif  // GDP_CMD_DAEMON_H_
