// Watches the GPUs through NVML and feeds what it sees to a HealthTracker:
// XID and ECC events from an NVML event set, lost GPUs and GPUs that answer
// again from periodic probes, the probes the tracker asks for, and NVML
// failing as a whole.
#ifndef GDP_HEALTH_MONITOR_H_
#define GDP_HEALTH_MONITOR_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "health/tracker.h"
#include "nvml/nvml.h"

namespace gdp {

struct HealthMonitorOptions {
  // The longest single NVML wait. NVML cannot interrupt a wait, so this
  // bounds how long Stop takes to end Run.
  absl::Duration wait_slice = absl::Milliseconds(100);
  // How often every watched GPU is probed (lost GPUs show no event: a GPU
  // that fell off the bus is found here, and so is one that came back).
  absl::Duration sweep_interval = absl::Seconds(5);
  // How often a failed NVML is tried again (a new event set).
  absl::Duration retry_interval = absl::Seconds(5);
  // The tracker's clock (sweeps and probes are due by it); tests pass a
  // fake one. NVML waits always use real time.
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

// The event types registered on every GPU (masked by what it supports).
inline constexpr unsigned long long kHealthEventTypes =
    nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError |
    nvmlEventTypeSingleBitEccError;

// One thread runs Step/Run; Watch and Stop may be called from any thread.
class HealthMonitor {
 public:
  // `nvml` and `tracker` must outlive the monitor. `gpus`: the GPUs to
  // watch (see Watch). Nothing is called on NVML until the first Step.
  HealthMonitor(const Nvml& nvml, HealthTracker& tracker,
                std::vector<GpuRef> gpus, HealthMonitorOptions options = {});
  // Frees the event set. REQUIRES: Run/Step are not running.
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Also watches these GPUs from the next Step on (by UUID; ones already
  // watched keep their state, their index is updated). GPUs are never
  // dropped: one that vanished from discovery is still probed, and comes
  // back healthy when it answers again.
  void Watch(std::vector<GpuRef> gpus) ABSL_LOCKS_EXCLUDED(mu_);

  // One round: sets NVML up if needed (event set, registration of every
  // GPU for kHealthEventTypes: a GPU that supports none or answers
  // NOT_SUPPORTED is logged and watched by probes only, a lost GPU is
  // reported lost); runs the sweep and the tracker's probes when due; then
  // waits up to `max_wait` (in wait_slice pieces, ending early on Stop or
  // when the next sweep or probe is due) for events and hands every event
  // that came to the tracker. Returns after handling events, after
  // `max_wait`, or on Stop. If NVML fails (the wait errs, or no event set
  // can be made), the tracker is told, the event set dropped, and it is
  // made anew in a later Step, at most every retry_interval; in between
  // Step sleeps (Stop ends that at once). NVML counts as working again
  // when a wait on the new set succeeds or times out. A wait answering
  // NVML_ERROR_GPU_IS_LOST is no NVML failure: every GPU is probed at once
  // and the event set made anew.
  void Step(absl::Duration max_wait) ABSL_LOCKS_EXCLUDED(mu_);

  // Steps until Stop.
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  // Makes Run return (within one wait_slice) and every later Step return
  // at once. Thread-safe; does not wait.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Watched {
    GpuRef ref;
    nvmlDevice_t handle = nullptr;  // when registered
    bool registered = false;        // on the current event set
    std::string last_error;         // of registration or sweep, logged
  };

  // Makes the event set and registers every GPU. False if NVML failed.
  bool SetUp();
  // Registers `gpu` on the event set (a fresh handle by UUID).
  void Register(Watched& gpu);
  // Adds GPUs passed to Watch.
  void TakeNewGpus() ABSL_LOCKS_EXCLUDED(mu_);
  // Probes every GPU; re-registers the ones that answer again.
  void Sweep();
  void RunDueProbes();
  // Frees the event set; a new one is made after retry_interval.
  void DropEventSet();
  void Handle(const NvmlEvent& event);
  // Waits on the stop flag up to `d` of real time.
  void Sleep(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);
  bool stopping() const { return stop_.load(); }

  const Nvml& nvml_;
  HealthTracker& tracker_;
  const HealthMonitorOptions options_;

  // Owned by the stepping thread.
  std::vector<Watched> gpus_;
  std::unique_ptr<NvmlEventSet> set_;
  absl::Time next_sweep_ = absl::InfinitePast();  // tracker clock
  absl::Time next_setup_ = absl::InfinitePast();  // real time

  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::vector<GpuRef> incoming_ ABSL_GUARDED_BY(mu_);  // from Watch
};

}  // namespace gdp

#endif  // GDP_HEALTH_MONITOR_H_
