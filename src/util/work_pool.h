// Threads that run posted jobs, for work that blocks (reading the API
// server) and must not run on gRPC's threads: up to a fixed number of jobs
// at once, a bounded number waiting. Threads start when jobs come and end
// after a while without any, so an idle pool has no thread and costs no
// wakeup.
#ifndef GDP_UTIL_WORK_POOL_H_
#define GDP_UTIL_WORK_POOL_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gdp {

struct WorkPoolOptions {
  std::string name = "gdp-work";  // of its threads (15 characters shown)
  size_t max_threads = 1;         // jobs run at once; at least 1
  size_t max_queued = 64;         // jobs waiting for a busy thread
  // A thread with no job for this long ends.
  absl::Duration idle = absl::Seconds(30);
};

// Thread-safe.
class WorkPool {
 public:
  explicit WorkPool(WorkPoolOptions options);
  // Runs the jobs already posted (and waits for the running ones), then
  // ends the threads. Jobs posted after the destructor started are refused.
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Runs `job` on a thread of the pool, after the jobs posted before it
  // have started. Returns false (and drops `job`) when every thread is
  // busy and max_queued jobs already wait, or the pool is being destroyed.
  bool Post(std::function<void()> job) ABSL_LOCKS_EXCLUDED(mu_);

  // Threads that live now (running or waiting for a job).
  size_t threads() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  // Joins the threads that have ended.
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const WorkPoolOptions options_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  size_t threads_ ABSL_GUARDED_BY(mu_) = 0;   // alive
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;      // waiting for a job
  size_t starting_ ABSL_GUARDED_BY(mu_) = 0;  // started, not in Loop yet
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::thread> running_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> ended_ ABSL_GUARDED_BY(mu_);  // to be joined
};

}  // namespace gdp

#endif  // GDP_UTIL_WORK_POOL_H_
