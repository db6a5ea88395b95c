// The kubelet's device-manager state: registered resources, their devices
// and health, and the devices taken by pods; and the kubelet's way of
// choosing and allocating devices for a container.
#ifndef GDP_DPCTL_DEVICE_MANAGER_H_
#define GDP_DPCTL_DEVICE_MANAGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "device_plugin_api.h"
#include "events.h"
#include "v1beta1/api.pb.h"

namespace gdp::dpctl {

// Thread-safe. Reports every change to the EventSink (while holding its
// lock, so events come out in the order the state changed).
class DeviceManager {
 public:
  // `events` is not owned and must outlive the manager.
  explicit DeviceManager(EventSink* events);
  // Calls Stop.
  ~DeviceManager();

  DeviceManager(const DeviceManager&) = delete;
  DeviceManager& operator=(const DeviceManager&) = delete;

  // Makes `plugin` the plugin of `resource`, replacing (and cancelling) the
  // previous one; the resource keeps its device list until the new plugin's
  // first UpdateDevices. Returns the registration's generation, never 0, to
  // pass to UpdateDevices and StreamClosed. After Stop, cancels `plugin` and
  // returns 0.
  uint64_t AddPlugin(const std::string& resource,
                     const v1beta1::DevicePluginOptions& options,
                     std::shared_ptr<DevicePluginApi> plugin);

  // One ListAndWatch message from registration `generation`: replaces the
  // resource's device list and emits a devices event. Ignored when that
  // registration has been replaced, and after Stop.
  void UpdateDevices(const std::string& resource, uint64_t generation,
                     const std::vector<v1beta1::Device>& devices);

  // The ListAndWatch stream of registration `generation` ended with
  // `status`: emits stream_closed and marks all of the resource's devices
  // Unhealthy. Ignored when that registration has been replaced, and after
  // Stop.
  void StreamClosed(const std::string& resource, uint64_t generation,
                    const absl::Status& status);

  // Chooses `count` healthy free devices of `resource` for one container of
  // `pod` (asking the plugin for a preference when it offers one), calls
  // Allocate, then PreStartContainer when the plugin requires it. Emits
  // preferred / allocate / prestart events, or allocate_failed when no
  // choice is possible. On success the devices stay taken by `pod` until
  // Free and are returned. Errors: NOT_FOUND (unknown resource),
  // RESOURCE_EXHAUSTED (too few healthy free devices), the plugin's status
  // for a failed call (after a failed PreStartContainer the devices stay
  // taken), CANCELLED after Stop. Allocations run one at a time; blocks for
  // the plugin calls.
  absl::StatusOr<std::vector<std::string>> Allocate(const std::string& resource,
                                                    int count,
                                                    const std::string& pod);

  // Returns every device taken by `pod`, emitting one freed event per
  // resource. NOT_FOUND when the pod holds no devices.
  absl::Status Free(const std::string& pod);

  // Emits a devices event per resource, in name order.
  void List();

  // The number of Healthy devices of `resource` not taken by any pod (0 for
  // an unknown resource).
  int HealthyFreeCount(const std::string& resource) const;

  // A counter that changes with every state change.
  uint64_t version() const;

  // Blocks until version() differs from `seen` (returns true) or Stop is
  // called (returns false).
  bool AwaitChange(uint64_t seen) const;

  // Cancels every plugin's calls, fails later Allocate calls and wakes
  // AwaitChange. Idempotent.
  void Stop();

 private:
  struct Resource {
    uint64_t generation = 0;
    v1beta1::DevicePluginOptions options;
    std::shared_ptr<DevicePluginApi> plugin;
    std::vector<v1beta1::Device> devices;
  };
  // What Allocate needs to know about a resource, copied under the lock.
  struct Choice {
    std::vector<std::string> available;
    v1beta1::DevicePluginOptions options;
    std::shared_ptr<DevicePluginApi> plugin;
  };

  absl::StatusOr<Choice> Available(const std::string& resource, int count,
                                   const std::string& pod);
  absl::StatusOr<std::vector<std::string>> Choose(const std::string& resource,
                                                  int count,
                                                  const std::string& pod,
                                                  const Choice& choice);
  // IDs of `resource`'s Healthy devices not taken by any pod, in the
  // plugin's order, without duplicates.
  std::vector<std::string> HealthyFreeLocked(const std::string& resource,
                                             const Resource& r) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void Changed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { ++version_; }

  EventSink* const events_;
  // Serializes Allocate, so two allocations never choose the same devices.
  absl::Mutex allocate_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_generation_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Resource> resources_ ABSL_GUARDED_BY(mu_);
  // pod -> resource -> device IDs taken by the pod.
  std::map<std::string, std::map<std::string, std::vector<std::string>>> taken_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DEVICE_MANAGER_H_
