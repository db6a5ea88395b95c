// Keeps this node's pool of ResourceSlices on the API server equal to the
// devices the DRA side publishes: creates, updates and deletes slices so
// that consumers never mix two publications (pool generation and
// resourceSliceCount), and puts them back when someone else deletes or
// changes them (the kubelet deletes a node's slices when it starts, and 30 s
// after our socket goes). Knows slices, not GPUs.
#ifndef GDP_DRA_PUBLISHER_H_
#define GDP_DRA_PUBLISHER_H_

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dra/slice_json.h"
#include "dra/slices.h"
#include "kube/client.h"

namespace gdp::dra {

struct PublisherOptions {
  std::string driver_name;
  std::string node_name;  // the pool, nodeName and owning Node
  SliceLimits limits;
  // Retry after a failed reconcile: doubling from initial to max.
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
  // How long one watch request runs before it is renewed.
  absl::Duration watch_timeout = absl::Minutes(5);
};

// What the publisher has achieved, for probes and metrics.
struct PublisherStatus {
  bool in_sync = false;  // the pool on the server is what we want
  int64_t generation = 0;
  size_t slices = 0;
  size_t devices = 0;
  std::string last_error;  // of the last failed attempt; "" after success
  // The API server dropped our taints (DRADeviceTaints off): unhealthy
  // devices are withheld from the slices instead.
  bool taints_dropped = false;
};

// Thread-safe. Run() and the watch loop each need a thread; Step() lets a
// test drive the reconcile loop instead.
class SlicePublisher {
 public:
  // `api` must outlive the publisher; it is also used for the watch (a
  // connection of its own).
  SlicePublisher(kube::Client& api, PublisherOptions options);
  ~SlicePublisher();
  SlicePublisher(const SlicePublisher&) = delete;
  SlicePublisher& operator=(const SlicePublisher&) = delete;

  // The devices the pool should hold now (with their taints). Wakes the
  // loop when they differ from the last ones given.
  void SetDevices(std::vector<SliceDevice> devices) ABSL_LOCKS_EXCLUDED(mu_);

  // Reconciles until Stop(). Call from one thread.
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  // Watches this node's slices until Stop(), marking the pool out of sync
  // when an object changes that we did not write. Call from one thread.
  void RunWatch() ABSL_LOCKS_EXCLUDED(mu_);

  // One round of Run(): reconcile if out of sync and due, then wait until
  // something changes, the next retry, Stop() or `max_wait`.
  void Step(absl::Duration max_wait = absl::InfiniteDuration())
      ABSL_LOCKS_EXCLUDED(mu_);

  // Thread-safe. Makes Run(), RunWatch() and Step() return promptly
  // (cancels requests in flight).
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  PublisherStatus status() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One attempt to make the server's pool what we want.
  absl::Status Reconcile() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status EnsureOwner() ABSL_LOCKS_EXCLUDED(mu_);
  void MarkOutOfSync() ABSL_LOCKS_EXCLUDED(mu_);

  kube::Client& api_;
  const PublisherOptions options_;
  const std::string collection_;      // the resourceslices path
  const std::string field_selector_;  // spec.nodeName=..,spec.driver=..

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;  // reconcile needed
  std::vector<SliceDevice> wanted_ ABSL_GUARDED_BY(mu_);
  bool wanted_set_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time next_attempt_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration backoff_ ABSL_GUARDED_BY(mu_);
  // (name, resourceVersion) of every slice as we last saw or wrote it: a
  // watch event for anything else means someone else changed the pool.
  std::set<std::pair<std::string, std::string>> known_ ABSL_GUARDED_BY(mu_);
  // Slices we delete: their DELETED events are ours.
  std::set<std::string> deleted_ ABSL_GUARDED_BY(mu_);
  std::string list_resource_version_ ABSL_GUARDED_BY(mu_);
  NodeOwner owner_ ABSL_GUARDED_BY(mu_);
  PublisherStatus status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::dra

#endif  // GDP_DRA_PUBLISHER_H_
