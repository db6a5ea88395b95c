// For the DRA benchmark: follows one node's ResourceSlices on the API
// server through a watch (no polling) and tells when they reach a state,
// with the arrival time of the event that brought it.
#ifndef GDP_BENCH_SLICE_WATCH_H_
#define GDP_BENCH_SLICE_WATCH_H_

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kube/client.h"

namespace gdp::bench {

// Every device of the node's slices by device name (the device objects as
// published: name, attributes, capacity, taints).
using SliceDevices = std::map<std::string, nlohmann::json>;
using SlicePredicate = std::function<bool(const SliceDevices&)>;

// Thread-safe. Watches /apis/resource.k8s.io/v1/resourceslices with
// fieldSelector spec.nodeName=<node> on a thread of its own; when the watch
// ends or fails it forgets what it saw and watches again from the current
// state (the ADDED events of a new watch rebuild it).
class SliceWatch {
 public:
  // Starts watching with `api` (used for nothing else: Stop() cancels it).
  SliceWatch(std::unique_ptr<kube::Client> api, const std::string& node);
  // Stops the watch and joins its thread.
  ~SliceWatch();
  SliceWatch(const SliceWatch&) = delete;
  SliceWatch& operator=(const SliceWatch&) = delete;

  // Arms `pred`: from now on each event is checked against it (the state
  // now is not), and the first event after which it holds is remembered.
  // Replaces a predicate armed before.
  void Arm(SlicePredicate pred) ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until an event after Arm() made the armed predicate hold, or
  // `timeout`. Result: that event's arrival time; InfinitePast on timeout.
  // Disarms the predicate.
  absl::Time Await(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until `pred` holds for the state now or after an event, or
  // `timeout`. Result: whether it held.
  bool WaitUntil(const SlicePredicate& pred, absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The devices seen now.
  SliceDevices Devices() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop();
  SliceDevices DevicesLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HitLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return hit_ != absl::InfinitePast();
  }

  const std::unique_ptr<kube::Client> api_;
  const std::string node_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Each slice's devices (spec.devices), by slice name.
  std::map<std::string, nlohmann::json> slices_ ABSL_GUARDED_BY(mu_);
  uint64_t events_ ABSL_GUARDED_BY(mu_) = 0;
  SlicePredicate armed_ ABSL_GUARDED_BY(mu_);
  absl::Time hit_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::thread thread_;  // last: starts after the members it uses
};

// Predicates: exactly `n` devices; device `name` has (or has no) taint
// with key `key`.
SlicePredicate DeviceCountIs(size_t n);
SlicePredicate HasTaint(const std::string& name, const std::string& key);
SlicePredicate HasNoTaint(const std::string& name);

}  // namespace gdp::bench

#endif  // GDP_BENCH_SLICE_WATCH_H_
