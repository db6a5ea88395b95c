#include "nvml/runner.h"

#include "util/keep_until_exit.h"
#include "util/thread_name.h"

namespace gdp {

struct NvmlRunner::Worker {
  absl::Mutex mu;
  std::function<void()> fn ABSL_GUARDED_BY(mu);
  std::shared_ptr<NvmlJob> job ABSL_GUARDED_BY(mu);  // handed, not taken
  bool stop ABSL_GUARDED_BY(mu) = false;
  // End once the job in progress returns: it was given up.
  bool abandoned ABSL_GUARDED_BY(mu) = false;
  bool exited ABSL_GUARDED_BY(mu) = false;  // takes no more jobs
};

NvmlRunner::NvmlRunner(const Nvml& nvml, absl::Duration idle_exit)
    : nvml_(nvml), idle_exit_(idle_exit) {}

NvmlRunner::~NvmlRunner() {
  Cancel();
  absl::MutexLock run(&run_mu_);
  if (worker_ == nullptr) return;
  {
    absl::MutexLock lock(&worker_->mu);
    worker_->stop = true;
  }
  thread_.join();
}

void NvmlRunner::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (job_ != nullptr) {
    absl::MutexLock job(&job_->mu);
    job_->cancelled = true;
  }
}

void NvmlRunner::WorkerLoop(std::shared_ptr<Worker> w, NvmlCallGate* gate,
                            absl::Duration idle_exit) {
  NameThisThread("gdp-nvml");
  Loop(*w, idle_exit);
  w = nullptr;
  gate->WorkerEnded();  // last: the Nvml may be destroyed right after
}

void NvmlRunner::Loop(Worker& worker, absl::Duration idle_exit) {
  Worker* w = &worker;
  for (;;) {
    std::function<void()> fn;
    std::shared_ptr<NvmlJob> job;
    {
      absl::MutexLock lock(&w->mu);
      auto ready = [&w]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu) {
        return w->job != nullptr || w->stop || w->abandoned;
      };
      w->mu.AwaitWithTimeout(absl::Condition(&ready), idle_exit);
      if (w->job == nullptr) {
        w->exited = true;
        return;
      }
      fn = std::move(w->fn);
      job = std::move(w->job);
      w->fn = nullptr;
      w->job = nullptr;
    }
    SetCurrentNvmlJob(job.get());
    fn();
    SetCurrentNvmlJob(nullptr);
    // What it captured is released here, outside the job (even a given-up
    // one), so that e.g. an event set is freed once its wait returned.
    fn = nullptr;
    {
      absl::MutexLock lock(&job->mu);
      job->done = true;
    }
    absl::MutexLock lock(&w->mu);
    if (w->abandoned || w->stop) {
      w->exited = true;
      return;
    }
  }
}

void NvmlRunner::AbandonWorker() {
  {
    absl::MutexLock lock(&worker_->mu);
    worker_->abandoned = true;
  }
  thread_.detach();
  // Its thread may stay blocked in NVML: the process must then end without
  // destructors (main sees this and keeps the Nvml too).
  KeepUntilExit(std::move(worker_));
  worker_ = nullptr;
}

absl::Status NvmlRunner::Run(std::function<void()> fn) {
  const absl::Duration deadline = nvml_.gate().deadline();
  absl::MutexLock run(&run_mu_);
  auto job = std::make_shared<NvmlJob>();
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) {
      return absl::CancelledError("stopping: NVML work not started");
    }
    if (deadline > absl::ZeroDuration()) job_ = job;
  }
  if (deadline <= absl::ZeroDuration()) {
    fn();
    return absl::OkStatus();
  }
  bool handed = false;
  if (worker_ != nullptr) {
    absl::MutexLock lock(&worker_->mu);
    if (!worker_->exited) {
      worker_->fn = std::move(fn);
      worker_->job = job;
      handed = true;
    }
  }
  if (!handed) {
    if (thread_.joinable()) thread_.join();  // ended after idling
    worker_ = std::make_shared<Worker>();
    {
      absl::MutexLock lock(&worker_->mu);
      worker_->fn = std::move(fn);
      worker_->job = job;
    }
    nvml_.gate().WorkerStarted();
    thread_ = std::thread(&NvmlRunner::WorkerLoop, worker_, &nvml_.gate(),
                          idle_exit_);
  }

  absl::Status result;
  {
    absl::MutexLock lock(&job->mu);
    auto finished = [&job]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(job->mu) {
      return job->done || job->cancelled;
    };
    for (;;) {
      // A call's deadline runs from its start; between calls the job is
      // checked again a deadline later (no wakeup per call).
      const absl::Time until = job->in_call ? job->start + deadline + job->extra
                                            : absl::Now() + deadline;
      if (job->mu.AwaitWithDeadline(absl::Condition(&finished), until)) {
        if (job->done) break;
        job->abandoned = true;
        result = absl::CancelledError(
            "stopping: the NVML work in progress was left behind");
        break;
      }
      if (job->in_call && absl::Now() >= job->start + deadline + job->extra) {
        result = nvml_.gate().MarkHung(*job);
        break;
      }
    }
  }
  {
    absl::MutexLock lock(&mu_);
    job_ = nullptr;
  }
  if (!result.ok()) AbandonWorker();
  return result;
}

}  // namespace gdp
