// Deadlines on NVML calls. A sick GPU can make an NVML call hang (so does
// nvidia-smi then); nothing can interrupt it. So every NVML call made
// inside an NvmlRunner job (nvml/runner.h) is watched: once one has run
// past its deadline, the runner gives the job up (its thread is left
// blocked in NVML) and the call is recorded here as hung. Until it returns,
// every later call about the same GPU handle (or, for a hung call about no
// GPU, every NVML call) fails at once with the hang's status instead of
// hanging too, so callers keep working around it. A lookup by UUID or index
// of a GPU seen before counts as a call about it; a call about two GPUs
// blocks only calls about two GPUs sharing one.
#ifndef GDP_NVML_DEADLINE_H_
#define GDP_NVML_DEADLINE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nvml/nvml_api.h"

namespace gdp {

// The default deadline of an NVML call (--nvml-timeout).
inline constexpr absl::Duration kDefaultNvmlDeadline = absl::Seconds(10);

// An NVML call that did not return by its deadline.
struct NvmlHang {
  std::string function;  // e.g. "nvmlDeviceGetMemoryInfo"
  std::string subject;   // the UUID of the GPU it took, if known; else ""
  bool per_gpu = false;  // it took a device handle
  absl::Time since;      // when it was called
  absl::Duration deadline;
  // "NVML nvmlDeviceGetMemoryInfo did not return in 10s", with " (GPU-..)"
  // when the subject is known.
  std::string Message() const;
};

// The status of a hung call and of every call refused because of one:
// DeadlineExceeded with `message` and a payload IsNvmlHang recognises.
// `per_gpu`: the hung call took a device handle (else NVML as a whole is
// stuck: IsNvmlHangOfAll).
absl::Status NvmlHangStatus(const std::string& message, bool per_gpu);
bool IsNvmlHang(const absl::Status& status);
bool IsNvmlHangOfAll(const absl::Status& status);

// The NVML call in progress of one runner job, shared by the job's thread
// and the thread waiting for it (NvmlRunner). Internal to nvml/.
struct NvmlJob {
  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;       // the job returned
  bool cancelled ABSL_GUARDED_BY(mu) = false;  // the runner stops waiting
  bool in_call ABSL_GUARDED_BY(mu) = false;
  const char* function ABSL_GUARDED_BY(mu) = nullptr;
  nvmlDevice_t devices[2] ABSL_GUARDED_BY(mu) = {nullptr, nullptr};
  absl::Time start ABSL_GUARDED_BY(mu);
  absl::Duration extra ABSL_GUARDED_BY(mu);  // e.g. an event wait's timeout
  // Given up: the job's later calls fail at once (Cancelled).
  bool abandoned ABSL_GUARDED_BY(mu) = false;
  // Nonzero: the call in progress is recorded hung under this ID.
  uint64_t hang_id ABSL_GUARDED_BY(mu) = 0;
};

// The job the calling thread runs (set by NvmlRunner's worker), or null.
NvmlJob* CurrentNvmlJob();
void SetCurrentNvmlJob(NvmlJob* job);

// The hung-call record of one Nvml. Thread-safe.
class NvmlCallGate {
 public:
  NvmlCallGate() = default;
  NvmlCallGate(const NvmlCallGate&) = delete;
  NvmlCallGate& operator=(const NvmlCallGate&) = delete;

  // The deadline of a call inside a runner job; zero: none (runner jobs
  // run inline on the caller's thread). Set before any job runs.
  void set_deadline(absl::Duration d) { deadline_ = d; }
  absl::Duration deadline() const { return deadline_; }

  // Remembers that `device` is the GPU or MIG device `uuid` (to name it in
  // hang messages), or the GPU at NVML index `index`; and the handle known
  // for a UUID or an index (null if none), so that a lookup by UUID or
  // index is a call about that GPU rather than about every GPU.
  void Name(nvmlDevice_t device, const std::string& uuid)
      ABSL_LOCKS_EXCLUDED(mu_);
  void NameIndex(unsigned index, nvmlDevice_t device) ABSL_LOCKS_EXCLUDED(mu_);
  nvmlDevice_t HandleOf(const std::string& uuid) const ABSL_LOCKS_EXCLUDED(mu_);
  nvmlDevice_t HandleAt(unsigned index) const ABSL_LOCKS_EXCLUDED(mu_);

  // Before an NVML call `function` taking handles `a` and `b` (null: none):
  // the hang's status if a hung call blocks it (see the file comment),
  // Cancelled if the calling job was given up; otherwise OK, and the call
  // is recorded as the job's call in progress (with `extra` added to its
  // deadline). Every OK Enter must be followed by Leave on the same thread.
  absl::Status Enter(const char* function, nvmlDevice_t a, nvmlDevice_t b,
                     absl::Duration extra) ABSL_LOCKS_EXCLUDED(mu_);
  // After the call: if it had been recorded hung, the record is dropped
  // (and logged): calls about its GPU go through again.
  void Leave() ABSL_LOCKS_EXCLUDED(mu_);

  // Records `job`'s call in progress as hung, gives the job up and returns
  // the hang's status. Logged, and counted in
  // gpu_device_plugin_nvml_hangs_total{function}.
  // REQUIRES: job.mu held, job.in_call.
  absl::Status MarkHung(NvmlJob& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(job.mu)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The calls hung now, oldest first.
  std::vector<NvmlHang> Hangs() const ABSL_LOCKS_EXCLUDED(mu_);

  // Runner worker threads alive (NvmlRunner counts them), and a wait for
  // none to be left, up to `timeout`; whether none is.
  void WorkerStarted() ABSL_LOCKS_EXCLUDED(mu_);
  void WorkerEnded() ABSL_LOCKS_EXCLUDED(mu_);
  bool WaitForWorkers(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Record {
    NvmlHang hang;
    nvmlDevice_t devices[2];
  };
  absl::Status Blocked(nvmlDevice_t a, nvmlDevice_t b) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  absl::Duration deadline_ = absl::ZeroDuration();
  std::atomic<int> hang_count_{0};  // fast path: no lock when 0
  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Ordered by ID, i.e. oldest first.
  std::vector<std::pair<uint64_t, Record>> hangs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<nvmlDevice_t, std::string> names_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, nvmlDevice_t> by_uuid_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<unsigned, nvmlDevice_t> by_index_ ABSL_GUARDED_BY(mu_);
  int workers_ ABSL_GUARDED_BY(mu_) = 0;
};

// Enter/Leave as a scope: `status()` is Enter's result; Leave runs at the
// end of the scope when Enter succeeded.
class NvmlCallScope {
 public:
  NvmlCallScope(NvmlCallGate& gate, const char* function, nvmlDevice_t a,
                nvmlDevice_t b, absl::Duration extra = absl::ZeroDuration())
      : gate_(gate), status_(gate.Enter(function, a, b, extra)) {}
  ~NvmlCallScope() {
    if (status_.ok()) gate_.Leave();
  }
  NvmlCallScope(const NvmlCallScope&) = delete;
  NvmlCallScope& operator=(const NvmlCallScope&) = delete;
  const absl::Status& status() const { return status_; }

 private:
  NvmlCallGate& gate_;
  const absl::Status status_;
};

}  // namespace gdp

#endif  // GDP_NVML_DEADLINE_H_
