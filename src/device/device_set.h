// The current devices of one resource, shared between the code that changes
// them (discovery, health) and the code that serves them (ListAndWatch,
// Allocate).
#ifndef GDP_DEVICE_DEVICE_SET_H_
#define GDP_DEVICE_DEVICE_SET_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "device/device.h"

namespace gdp {

// Thread-safe. Readers get an immutable snapshot; every change publishes a
// new snapshot with a higher generation and notifies subscribers.
class DeviceSet {
 public:
  explicit DeviceSet(std::vector<Device> devices);

  // The current list. Never null. Cheap: copies one shared pointer.
  std::shared_ptr<const DeviceList> Get() const ABSL_LOCKS_EXCLUDED(mu_);

  // Replaces the whole list (e.g. after rediscovery) and notifies.
  void Replace(std::vector<Device> devices) ABSL_LOCKS_EXCLUDED(mu_);

  // Sets one device's health and reason. Returns false (and does not
  // notify) if no device has this ID or nothing changed.
  bool SetHealth(const std::string& id, Health health,
                 const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);

  // Calls `on_change` after every published change, on the thread that made
  // the change, until Unsubscribe. `on_change` must be quick, must not block
  // and must not call back into this DeviceSet. Returns a token.
  uint64_t Subscribe(std::function<void()> on_change)
      ABSL_LOCKS_EXCLUDED(subs_mu_);

  // After this returns, the callback of `token` is not running and will not
  // run again. Must not be called from inside a callback.
  void Unsubscribe(uint64_t token) ABSL_LOCKS_EXCLUDED(subs_mu_);

 private:
  // Runs every subscriber's callback.
  void Notify() ABSL_LOCKS_EXCLUDED(mu_, subs_mu_);

  mutable absl::Mutex mu_;
  std::shared_ptr<const DeviceList> list_ ABSL_GUARDED_BY(mu_);

  // Held while callbacks run, so Unsubscribe waits out a running one.
  absl::Mutex subs_mu_ ABSL_ACQUIRED_AFTER(mu_);
  uint64_t next_token_ ABSL_GUARDED_BY(subs_mu_) = 1;
  std::map<uint64_t, std::function<void()>> subs_ ABSL_GUARDED_BY(subs_mu_);
};

}  // namespace gdp

#endif  // GDP_DEVICE_DEVICE_SET_H_
