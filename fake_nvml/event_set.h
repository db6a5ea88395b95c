// An nvmlEventSet_t: which (GPU, event type) pairs it records and the queue
// of events not yet handed to nvmlEventSetWait. All members require
// state_mutex; waiters sleep on the set's condition variable with it.
#ifndef GDP_FAKE_NVML_EVENT_SET_H_
#define GDP_FAKE_NVML_EVENT_SET_H_

#include <deque>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "fake_nvml/state_mutex.h"
#include "nvml/nvml_api.h"

namespace gdp::fake_nvml {

class EventSet {
 public:
  EventSet() = default;
  EventSet(const EventSet&) = delete;
  EventSet& operator=(const EventSet&) = delete;

  // Adds `types` to what this set records for GPU `gpu`. Events that
  // happened before are not recorded.
  void Register(unsigned gpu, unsigned long long types)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // Queues `event` if this set records its type for GPU `gpu`, and wakes
  // the waiters.
  void Offer(unsigned gpu, const nvmlEventData_t& event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // The GPUs this set records events of, in no particular order.
  std::vector<unsigned> RecordedGpus() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // Removes and returns the oldest queued event, if any.
  std::optional<nvmlEventData_t> Pop()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // Marks the set freed (nvmlEventSetFree or shutdown) and wakes waiters.
  void Close() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);
  bool closed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex) {
    return closed_;
  }

  // Wakes the waiters without queueing anything, so they re-check the
  // library state (e.g. after a fault is injected).
  void Wake() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

  // Releases state_mutex until woken or until `deadline`, then reacquires
  // it. May return early; callers re-check their condition.
  void WaitUntil(absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

 private:
  absl::CondVar changed_;
  absl::flat_hash_map<unsigned, unsigned long long> recorded_
      ABSL_GUARDED_BY(state_mutex);
  std::deque<nvmlEventData_t> queue_ ABSL_GUARDED_BY(state_mutex);
  bool closed_ ABSL_GUARDED_BY(state_mutex) = false;
};

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_EVENT_SET_H_
