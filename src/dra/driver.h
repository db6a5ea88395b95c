// The DRA side of the daemon: everything that serves the node's DRA GPUs
// through the kubelet's DRA plugin API and the API server. Owns the DRA
// devices (a DeviceSet whose health the daemon pushes, as for the device
// plugin's resources), the ResourceSlice publisher, the claim preparer with
// its checkpoint, the kubelet plugin's sockets and their threads.
#ifndef GDP_DRA_DRIVER_H_
#define GDP_DRA_DRIVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cdi/memory_limit.h"
#include "cdi/spec.h"
#include "device/device_set.h"
#include "device/gpu.h"
#include "device/mig_caps.h"
#include "dra/claim_calls.h"
#include "dra/dra_service.h"
#include "dra/dynamic_mig.h"
#include "dra/inventory.h"
#include "dra/kube_claims.h"
#include "dra/kubelet_plugin.h"
#include "dra/preparer.h"
#include "dra/publisher.h"
#include "kube/client.h"
#include "nvml/nvml.h"
#include "nvml/runner.h"
#include "topology/node_topology.h"

namespace gdp::dra {

struct DraDriverOptions {
  std::string driver_name = "gpu.nvidia.com";
  std::string node_name;
  std::string registration_dir = "/var/lib/kubelet/plugins_registry";
  std::string plugins_dir = "/var/lib/kubelet/plugins";
  std::string cdi_dir = "/var/run/cdi";
  // Where /proc is (the boot ID is read there).
  std::string proc_root = "/proc";
  // Host roots for the claims' CDI specs (kind is set here).
  cdi::CdiSpecOptions cdi;
  std::string mps_root;  // empty: MPS claim configs are refused
  // How a share's memory limit is applied (set when consumable shares are
  // on; nullopt: a share with a memory limit is refused at prepare).
  std::optional<cdi::MemoryLimitHook> memory_limit_hook;
  // Consumable shares and the node's memory-limit support for the
  // inventory (its driver_name is set from driver_name above).
  InventoryOptions inventory;
  kube::ClientConfig api;
  SliceLimits limits;
  // Timings, shortened by tests.
  PublisherOptions publisher;    // driver and node names are filled in
  KubeletPluginOptions kubelet;  // names and directories are filled in
  ClaimCallsOptions calls;
  // Makes and destroys the MIG instances of dynamic MIG devices (NVIDIA's
  // DynamicMIG), in NVML jobs of the driver's own runner; null: a claim of
  // one fails. Must outlive the driver.
  const Nvml* nvml = nullptr;
  // Tests only: PreparerOptions::on_mig_step.
  std::function<void(MigStep)> on_mig_step = nullptr;
};

// What the DRA side is doing, for probes and logs.
struct DraStatus {
  bool serving = false;     // both sockets are served
  bool registered = false;  // the kubelet said so (NotifyRegistrationStatus)
  std::string registration_error;  // the kubelet's last refusal
  PublisherStatus slices;
  size_t devices = 0;
  size_t healthy = 0;
  size_t prepared_claims = 0;
  std::string checkpoint_error;  // why the checkpoint was set aside
};

// Thread-safe but for Apply, which one thread calls.
class DraDriver {
 public:
  // Makes the API clients (from options.api) and the kubelet plugin; starts
  // nothing. Result on failure: the API client configuration (CA, token,
  // URL) or a directory that cannot be created, naming it.
  static absl::StatusOr<std::unique_ptr<DraDriver>> Create(
      DraDriverOptions options);

  // Stops serving (the kubelet plugin's sockets are removed), the
  // publisher and the queue. Published slices stay: they are the node's
  // devices until the kubelet, missing our socket for 30 s, deletes them.
  ~DraDriver();

  // Serves `node` (the GPUs the DRA side has: DeviceApiSplit::dra): builds
  // the devices (MIG devices need `mig_caps`), keeps the health of devices
  // that stay, finds the driver files for claim specs, and republishes the
  // slices. The dynamic MIG devices of the inventory (MIG profile
  // placements consuming their GPU's counters) are what prepare makes. The
  // first call also restores the checkpoint and starts the threads. Result on
  // failure: the devices cannot be built (a MIG capability missing); nothing
  // changed then.
  absl::Status Apply(const NodeGpus& node,
                     std::shared_ptr<const NodeTopology> topology,
                     const MigCaps* mig_caps);

  // The DRA devices, by name; the daemon pushes health into it
  // (ApplyHealth). Never null; lives as long as the driver.
  DeviceSet& devices() { return *devices_; }

  DraStatus status() const;

 private:
  explicit DraDriver(DraDriverOptions options);
  // The slices' devices from the current inventory and health.
  void Publish() ABSL_LOCKS_EXCLUDED(mu_);

  const DraDriverOptions options_;
  std::unique_ptr<kube::Client> slices_api_;
  std::unique_ptr<KubeClaimReader> claims_;
  std::unique_ptr<NvmlRunner> mig_runner_;
  std::unique_ptr<MigMaker> mig_maker_;
  std::unique_ptr<DeviceSet> devices_;
  std::unique_ptr<Preparer> preparer_;
  std::unique_ptr<SlicePublisher> publisher_;
  HealthStreams streams_;
  RegistrationState registration_;
  std::unique_ptr<ClaimCalls> calls_;
  std::unique_ptr<KubeletPlugin> plugin_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const std::vector<DraDevice>> inventory_ ABSL_GUARDED_BY(mu_);
  std::string checkpoint_error_ ABSL_GUARDED_BY(mu_);
  bool started_ = false;
  uint64_t subscription_ = 0;
  std::thread publisher_thread_;
  std::thread watch_thread_;
  std::thread plugin_thread_;
};

}  // namespace gdp::dra

#endif  // GDP_DRA_DRIVER_H_
