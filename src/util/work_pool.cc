#include "util/work_pool.h"

#include <algorithm>
#include <utility>

#include "util/thread_name.h"

namespace gdp {

WorkPool::WorkPool(WorkPoolOptions options) : options_(std::move(options)) {}

WorkPool::~WorkPool() {
  std::map<uint64_t, std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    // Threads waiting for a job wake up, run what is left, then end.
    threads = std::move(running_);
  }
  for (auto& [id, thread] : threads) thread.join();
}

bool WorkPool::Post(std::function<void()> job) {
  absl::MutexLock lock(&mu_);
  const size_t max_threads = std::max<size_t>(options_.max_threads, 1);
  // Threads about to take a job: idle ones and ones just started.
  const size_t takers = idle_ + starting_;
  const size_t waiting = jobs_.size() - std::min(jobs_.size(), takers);
  const bool can_start = threads_ < max_threads;
  if (stopping_ || (!can_start && jobs_.size() >= takers &&
                    waiting >= options_.max_queued)) {
    return false;
  }
  ReapLocked();
  jobs_.push_back(std::move(job));
  // A waiting thread takes it; else start one if the pool may grow.
  if (takers < jobs_.size() && can_start) {
    ++threads_;
    ++starting_;
    const uint64_t id = next_id_++;
    running_.emplace(id, std::thread([this, id] { Loop(id); }));
  }
  return true;
}

size_t WorkPool::threads() const {
  absl::MutexLock lock(&mu_);
  return threads_;
}

void WorkPool::ReapLocked() {
  for (uint64_t id : ended_) {
    auto it = running_.find(id);
    if (it == running_.end()) continue;
    it->second.join();  // it has left Loop: only its return is left
    running_.erase(it);
  }
  ended_.clear();
}

void WorkPool::Loop(uint64_t id) {
  NameThisThread(options_.name.c_str());
  mu_.Lock();
  --starting_;
  for (;;) {
    if (jobs_.empty()) {
      if (stopping_) break;
      ++idle_;
      const bool got = mu_.AwaitWithTimeout(
          absl::Condition(
              +[](WorkPool* p) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                return p->stopping_ || !p->jobs_.empty();
              },
              this),
          options_.idle);
      --idle_;
      if (!got) break;  // idle for long enough
      continue;
    }
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    mu_.Unlock();
    job();
    job = nullptr;  // what it holds goes before the lock is taken
    mu_.Lock();
  }
  --threads_;
  if (!stopping_) ended_.push_back(id);
  mu_.Unlock();
}

}  // namespace gdp
