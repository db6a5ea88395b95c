#include "util/work_queue.h"

#include <utility>

namespace gdp {

WorkQueue::WorkQueue() : thread_([this] { Loop(); }) {}

WorkQueue::~WorkQueue() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void WorkQueue::Post(std::function<void()> job) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  jobs_.push_back(std::move(job));
}

void WorkQueue::Loop() {
  for (;;) {
    std::function<void()> job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](WorkQueue* q) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return q->stopping_ || !q->jobs_.empty();
          },
          this));
      if (jobs_.empty()) return;  // stopping, nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace gdp
