// Runs one plugin (socket, registration, service) per resource and applies
// new resource sets: starts new resources, stops removed ones, restarts the
// ones whose definition changed and leaves the others alone, so a config
// reload does not disturb resources it did not touch.
#ifndef GDP_PLUGIN_MANAGER_H_
#define GDP_PLUGIN_MANAGER_H_

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "device/device_set.h"
#include "plugin/allocator.h"
#include "plugin/lifecycle.h"
#include "resources/resources.h"
#include "topology/node_topology.h"

namespace gdp {

// Everything one resource's plugin is made from.
struct PluginSpec {
  Resource resource;
  AllocatorOptions allocator;  // resource-specific fields filled in
  SharedAllocationPolicy policy = SharedAllocationPolicy::kDistributed;

  // Same resource definition and same answers (health aside).
  bool SameDefinition(const PluginSpec& o) const;
};

// What one running resource's plugin is doing now.
struct PluginStatus {
  std::string resource;
  bool registered = false;  // with the kubelet, since the last (re)start
  int open_streams = 0;     // ListAndWatch streams open now
  size_t healthy = 0;       // devices by health
  size_t unhealthy = 0;
};

// Thread-safe.
class PluginManager {
 public:
  // `lifecycle` is the template for every resource's lifecycle
  // (kubelet_socket, backoff); socket and resource names come from specs.
  // `topology`, when not null, is every resource's GPU topology for
  // GetPreferredAllocation (see ServiceOptions).
  explicit PluginManager(
      LifecycleOptions lifecycle,
      std::shared_ptr<const SharedTopology> topology = nullptr);

  // Stops every plugin and removes its socket.
  ~PluginManager();
  PluginManager(const PluginManager&) = delete;
  PluginManager& operator=(const PluginManager&) = delete;

  // Makes the running plugins match `specs` (one per resource name). A
  // restarted resource keeps the health of devices whose ID it keeps.
  // Result on failure: InvalidArgument for a socket path too long or a
  // resource named twice (nothing is changed then), or the first error of
  // starting a resource (logged; the other resources are applied).
  absl::Status Apply(std::vector<PluginSpec> specs) ABSL_LOCKS_EXCLUDED(mu_);

  // Stops every plugin (each removes its socket). Apply may start again.
  void StopAll() ABSL_LOCKS_EXCLUDED(mu_);

  // Names of the running resources, sorted.
  std::vector<std::string> Running() const ABSL_LOCKS_EXCLUDED(mu_);

  // The device set of a running resource, or nullptr. Valid until the
  // resource is stopped or restarted by Apply/StopAll.
  DeviceSet* Devices(const std::string& resource) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // True when every running resource is registered with the kubelet.
  bool AllRegistered() const ABSL_LOCKS_EXCLUDED(mu_);

  // Every running resource's status, sorted by name.
  std::vector<PluginStatus> Statuses() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Plugin;  // defined in manager.cc

  absl::StatusOr<std::unique_ptr<Plugin>> Start(PluginSpec spec,
                                                const Plugin* previous);

  const LifecycleOptions lifecycle_;
  const std::shared_ptr<const SharedTopology> topology_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Plugin>> plugins_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp

#endif  // GDP_PLUGIN_MANAGER_H_
