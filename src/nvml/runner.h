// Runs NVML work with deadlines (nvml/deadline.h): the work runs on a
// worker thread while the caller waits, and the caller stops waiting when
// an NVML call in it passes its deadline, or when the runner is cancelled
// (shutdown), leaving the worker blocked in NVML. So a hung NVML call costs
// its caller one deadline, after which calls about the same GPU fail at
// once, and never blocks shutdown.
#ifndef GDP_NVML_RUNNER_H_
#define GDP_NVML_RUNNER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nvml/deadline.h"
#include "nvml/nvml.h"

namespace gdp {

// Thread-safe: Run calls are served one at a time (a second waits for the
// first); Cancel may be called from any thread.
class NvmlRunner {
 public:
  // `nvml` must outlive the runner and any worker it leaves behind (see
  // Run). The worker thread is started on first use, and ends after
  // `idle_exit` without work (a runner used every few seconds keeps it).
  explicit NvmlRunner(const Nvml& nvml,
                      absl::Duration idle_exit = absl::Seconds(30));
  // Cancels; joins an idle worker, and leaves one still in a job behind.
  ~NvmlRunner();
  NvmlRunner(const NvmlRunner&) = delete;
  NvmlRunner& operator=(const NvmlRunner&) = delete;

  // Runs `job` on the worker and waits for it. With no deadline set on the
  // Nvml (zero), `job` runs on the calling thread instead.
  // Result: OK when the job returned. The status of the hang (IsNvmlHang,
  // DeadlineExceeded "NVML <function> did not return in 10s") when one of
  // its NVML calls passed the deadline (plus, for an event wait, its
  // timeout); Cancelled when the runner is cancelled. In those two cases
  // the job is left to finish on its thread, which is kept until the
  // process exits (util/keep_until_exit.h): whatever `job` captures must
  // stay valid for it (capture by value or shared_ptr, never a reference to
  // the caller's stack), and its later NVML calls fail at once.
  absl::Status Run(std::function<void()> job) ABSL_LOCKS_EXCLUDED(run_mu_);

  // Run for a job with a result: `fn`'s value, or Run's error.
  template <typename T>
  absl::StatusOr<T> Call(std::function<T()> fn) {
    auto out = std::make_shared<std::optional<T>>();
    absl::Status s = Run([fn = std::move(fn), out] { out->emplace(fn()); });
    if (!s.ok()) return s;
    return std::move(**out);
  }

  // Makes the Run in progress, and every later one, return Cancelled at
  // once. Does not wait.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Worker;
  static void WorkerLoop(std::shared_ptr<Worker> w, NvmlCallGate* gate,
                         absl::Duration idle_exit);
  static void Loop(Worker& w, absl::Duration idle_exit);
  // Leaves the current worker behind (it is busy with a given-up job).
  void AbandonWorker() ABSL_EXCLUSIVE_LOCKS_REQUIRED(run_mu_);

  const Nvml& nvml_;
  const absl::Duration idle_exit_;
  absl::Mutex run_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::shared_ptr<Worker> worker_ ABSL_GUARDED_BY(run_mu_);
  std::thread thread_ ABSL_GUARDED_BY(run_mu_);

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<NvmlJob> job_ ABSL_GUARDED_BY(mu_);  // being waited for
};

}  // namespace gdp

#endif  // GDP_NVML_RUNNER_H_
