#include "metrics/handler_pool.h"

#include <system_error>
#include <utility>

#include "util/thread_name.h"

namespace gdp::metrics {

HandlerPool::HandlerPool(RequestHandler handler, int max_threads,
                         std::function<void()> notify)
    : handler_(std::move(handler)),
      max_threads_(max_threads),
      notify_(std::move(notify)) {}

HandlerPool::~HandlerPool() { DropAndWait(); }

void HandlerPool::Submit(Job job) {
  if (static_cast<int>(threads_.size()) < max_threads_) {
    Start(std::move(job));
  } else {
    waiting_.push_back(std::move(job));
  }
}

void HandlerPool::Start(Job job) {
  const int fd = job.fd;
  try {
    threads_.emplace(fd, std::thread([this, job = std::move(job)] {
                       NameThisThread("gdp-http-req");
                       Reply r = handler_(job.fd, job.input, job.last);
                       r.close = r.close || job.last;
                       {
                         absl::MutexLock lock(&mu_);
                         done_.push_back(Done{job.fd, std::move(r)});
                       }
                       notify_();
                     }));
  } catch (const std::system_error&) {
    // No thread to be had: the request goes unanswered, not the loop.
    {
      absl::MutexLock lock(&mu_);
      done_.push_back(Done{fd, Reply{}});
    }
    notify_();
  }
}

void HandlerPool::Join(int fd) {
  if (auto t = threads_.find(fd); t != threads_.end()) {
    t->second.join();
    threads_.erase(t);
  }
}

std::vector<HandlerPool::Done> HandlerPool::TakeDone() {
  std::vector<Done> done;
  {
    absl::MutexLock lock(&mu_);
    done.swap(done_);
  }
  for (const Done& d : done) Join(d.fd);
  while (!waiting_.empty() &&
         static_cast<int>(threads_.size()) < max_threads_) {
    Start(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  return done;
}

void HandlerPool::DropAndWait() {
  waiting_.clear();
  while (!threads_.empty()) {
    std::vector<Done> done;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](std::vector<Done>* d) { return !d->empty(); }, &done_));
      done.swap(done_);
    }
    for (const Done& d : done) Join(d.fd);
  }
  absl::MutexLock lock(&mu_);
  done_.clear();
}

}  // namespace gdp::metrics
