// One thread that runs posted jobs in order: for work that blocks (reading
// the API server) and must not run on gRPC's callback threads.
#ifndef GDP_UTIL_WORK_QUEUE_H_
#define GDP_UTIL_WORK_QUEUE_H_

#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gdp {

// Thread-safe. The thread sleeps (no wakeups) while there is no job.
class WorkQueue {
 public:
  WorkQueue();
  // Runs the jobs already posted, then ends the thread. Jobs posted after
  // the destructor started are dropped.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Runs `job` on the queue's thread after the jobs posted before it.
  void Post(std::function<void()> job) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace gdp

#endif  // GDP_UTIL_WORK_QUEUE_H_
