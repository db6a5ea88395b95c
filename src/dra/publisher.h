// Keeps this node's pool of ResourceSlices on the API server equal to the
// devices the DRA side publishes: creates, updates and deletes slices so
// that consumers never mix two publications (pool generation and
// resourceSliceCount), and puts them back when someone else deletes or
// changes them (the kubelet deletes a node's slices when it starts, and 30 s
// after our socket goes). Knows slices, not GPUs.
#ifndef GDP_DRA_PUBLISHER_H_
#define GDP_DRA_PUBLISHER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dra/pacing.h"
#include "dra/slice_json.h"
#include "dra/slices.h"
#include "kube/client.h"

namespace gdp::dra {

struct PublisherOptions {
  std::string driver_name;
  std::string node_name;  // the pool, nodeName and owning Node
  SliceLimits limits;
  // Retry after a failed reconcile: a wait drawn from [b/2, b), b doubling
  // from initial to max (the jitter keeps nodes that failed together, as
  // in an API server outage, from retrying together).
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
  // Restarts of the slice watch and the renewal of each watch request.
  WatchPacing watch;
  // Reconciles that only others' writes to the pool trigger.
  ForeignWritePacing foreign;
  // The field manager the API server records for our writes (the
  // User-Agent up to its first '/', as we send no fieldManager): a
  // managedFields entry of another name is someone else's write.
  std::string field_manager = "gpu-device-plugin";
};

// What the publisher has achieved, for probes and metrics.
struct PublisherStatus {
  bool in_sync = false;  // the pool on the server is what we want
  int64_t generation = 0;
  size_t slices = 0;
  size_t devices = 0;
  size_t counter_sets = 0;  // shared counter sets (DynamicMIG)
  std::string last_error;   // of the last failed attempt; "" after success
  // The API server dropped our taints (DRADeviceTaints off): unhealthy
  // devices are withheld from the slices instead.
  bool taints_dropped = false;
  // The API server dropped allowMultipleAllocations and requestPolicy
  // (DRAConsumableCapacity off: Kubernetes 1.34 and 1.35 by default):
  // devices are published whole instead.
  bool shares_dropped = false;
  // The API server dropped sharedCounters and consumesCounters
  // (DRAPartitionableDevices off: Kubernetes 1.34 and 1.35 by default):
  // devices that consume part of a counter set (MIG profile placements)
  // are withheld, whole GPUs published without counters.
  bool counters_dropped = false;
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

  // The devices the pool should hold now (with their taints, counter
  // consumptions, and the counter sets they bring: CutIntoSlices). Wakes
  // the loop when they differ from the last ones given.
  void SetDevices(std::vector<SliceDevice> devices) ABSL_LOCKS_EXCLUDED(mu_);

  // Reconciles until Stop(). Call from one thread.
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  // Watches this node's slices until Stop(), marking the pool out of sync
  // when an object changes that we did not write (those reconciles are
  // rate limited per options.foreign). A watch is started again per
  // options.watch, however it ended. Call from one thread.
  void RunWatch() ABSL_LOCKS_EXCLUDED(mu_);

  // One round of Run(): reconcile if out of sync and due (after a failure:
  // its backoff; after only others' writes: a token of options.foreign),
  // then wait until something changes, the next attempt is due, Stop() or
  // `max_wait`.
  void Step(absl::Duration max_wait = absl::InfiniteDuration())
      ABSL_LOCKS_EXCLUDED(mu_);

  // Thread-safe. Makes Run(), RunWatch() and Step() return promptly
  // (cancels requests in flight).
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  PublisherStatus status() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One attempt to make the server's pool what we want; `*writes` counts
  // the creates, updates and deletes it made.
  absl::Status Reconcile(int* writes) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status EnsureOwner() ABSL_LOCKS_EXCLUDED(mu_);
  // The watch lost track (failed, expired): the pool must be checked.
  void MarkOutOfSync() ABSL_LOCKS_EXCLUDED(mu_);
  // A watch event for slice `name` at `version`: ours, or someone else's
  // change (judged when the reconcile in progress ends, if any).
  void OnWatchEvent(const std::string& type, const std::string& name,
                    const std::string& version, std::string writer)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool IsOursLocked(const std::string& name, const std::string& version) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ForeignWriteLocked(std::string writer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RememberWriteLocked(const std::string& name, const std::string& version)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  kube::Client& api_;
  const PublisherOptions options_;
  const std::string collection_;      // the resourceslices path
  const std::string field_selector_;  // spec.nodeName=..,spec.driver=..

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;  // reconcile needed
  // Only others' writes made it dirty: the reconcile needs a token.
  bool foreign_only_ ABSL_GUARDED_BY(mu_) = false;
  bool throttled_ ABSL_GUARDED_BY(mu_) = false;  // counted while waiting
  // Bumped by whatever may make a reconcile due: wakes Step.
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<SliceDevice> wanted_ ABSL_GUARDED_BY(mu_);
  bool wanted_set_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time next_attempt_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::BitGen jitter_ ABSL_GUARDED_BY(mu_);
  RetryBackoff backoff_ ABSL_GUARDED_BY(mu_);
  ForeignWriteLimiter foreign_ ABSL_GUARDED_BY(mu_);
  // The last other writer seen (managedFields manager), for the warning.
  std::string other_writer_ ABSL_GUARDED_BY(mu_);
  // (name, resourceVersion) of every slice as we last listed it: a watch
  // event for anything else that we did not write is someone else's.
  std::set<std::pair<std::string, std::string>> known_ ABSL_GUARDED_BY(mu_);
  // The versions we wrote most recently (a watch may lag behind a later
  // list), oldest first, and the same as a set.
  std::deque<std::pair<std::string, std::string>> written_order_
      ABSL_GUARDED_BY(mu_);
  std::set<std::pair<std::string, std::string>> written_ ABSL_GUARDED_BY(mu_);
  // While a reconcile runs, events it may have caused itself (their
  // versions are not known before its writes answer): judged when it ends.
  bool reconciling_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::tuple<std::string, std::string, std::string>> unsure_
      ABSL_GUARDED_BY(mu_);
  // Slices we delete: their DELETED events are ours.
  std::set<std::string> deleted_ ABSL_GUARDED_BY(mu_);
  std::string list_resource_version_ ABSL_GUARDED_BY(mu_);
  NodeOwner owner_ ABSL_GUARDED_BY(mu_);
  PublisherStatus status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::dra

#endif  // GDP_DRA_PUBLISHER_H_
