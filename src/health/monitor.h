// Watches the GPUs through NVML and feeds what it sees to a HealthTracker:
// XID and ECC events from an NVML event set, lost GPUs and GPUs that answer
// again from periodic probes, the probes the tracker asks for, and NVML
// failing as a whole.
#ifndef GDP_HEALTH_MONITOR_H_
#define GDP_HEALTH_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "health/probe.h"
#include "health/signals.h"
#include "health/tracker.h"
#include "health/watched_gpu.h"
#include "nvml/nvml.h"
#include "nvml/runner.h"

namespace gdp {

struct HealthMonitorOptions {
  // The longest single NVML wait. By default none: a wait lasts until an
  // event, or until the next sweep or probe is due, so an idle monitor
  // wakes once per sweep_interval. Tests with a fake clock set a short one.
  absl::Duration wait_slice = absl::InfiniteDuration();
  // How often every watched GPU is probed (lost GPUs show no event: a GPU
  // that fell off the bus is found here, and so is one that came back).
  absl::Duration sweep_interval = absl::Seconds(5);
  // How often a failed NVML is tried again (a new event set).
  absl::Duration retry_interval = absl::Seconds(5);
  // How often a sweep also reads the GPUs' health signals (health/signals.h:
  // row remapping, retired pages, PCIe link, throttle reasons, NVLinks).
  absl::Duration signals_interval = absl::Seconds(30);
  // Whether an NVLink that was active going inactive also makes its GPU
  // unhealthy (needs a reset). Either way it is counted and logged, and
  // on_topology_change runs.
  bool nvlink_down_unhealthy = false;
  // Runs on the monitor's thread after a sweep saw an NVLink change state
  // (so that the topology is read again); none if empty.
  std::function<void()> on_topology_change;
  // The tracker's clock (sweeps and probes are due by it); tests pass a
  // fake one. NVML waits always use real time.
  std::function<absl::Time()> clock = [] { return absl::Now(); };
  // Whether an idle monitor sweeps on the NVML worker without waking its
  // own thread: while every GPU is registered and answers, no signal
  // changes, NVML works and no probe is due, the wait job goes on waiting
  // and sweeping (health/monitor_jobs.h QuietRounds); anything else, an
  // event, Watch or Stop ends it at the end of the round. Needs the real
  // clock; ignored with a finite wait_slice.
  bool quiet_rounds = false;
};

// The GPUs of a discovery, with their MIG devices.
std::vector<WatchedGpu> WatchedGpus(const NodeGpus& node);

struct SweepAnswer;  // health/monitor_jobs.h
struct QuietRounds;  // health/monitor_jobs.h

// One thread runs Step/Run; Watch and Stop may be called from any thread.
//
// A GPU that needs a reset is healthy again when NVML shows it was reset:
// it was lost (or XID 79 said it fell off the bus) and answers again, a
// pending row remapping or page retirement is no longer pending, or its
// reset markers (recovery action, volatile ECC counts) read after an event
// and at every sweep show a reset (HealthTracker::OnResetMarkers).
//
// Every NVML call runs on the monitor's NvmlRunner, under the Nvml's call
// deadline (nvml/deadline.h): a call about a GPU that does not return in
// time makes that GPU unhealthy (HealthTracker::OnGpuHung) until it answers
// a probe again, and one about no GPU in particular (the event wait) makes
// NVML count as failed; the monitor goes on watching the other GPUs.
class HealthMonitor {
 public:
  // `nvml` and `tracker` must outlive the monitor. `gpus`: the GPUs to
  // watch (see Watch). Nothing is called on NVML until the first Step.
  HealthMonitor(const Nvml& nvml, HealthTracker& tracker,
                std::vector<WatchedGpu> gpus,
                HealthMonitorOptions options = {});
  // Frees the event sets (leaves them, while an NVML call hangs). REQUIRES:
  // Run/Step are not running.
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Also watches these GPUs from the next Step on (by UUID; ones already
  // watched keep their state, their index and MIG devices are updated).
  // GPUs are never dropped: one that vanished from discovery is still
  // probed, and comes back healthy when it answers again.
  void Watch(std::vector<WatchedGpu> gpus) ABSL_LOCKS_EXCLUDED(mu_);

  // One round: sets NVML up if needed (event set, registration of every
  // GPU for kHealthEventTypes: a GPU that supports none or answers
  // NOT_SUPPORTED is logged and watched by probes only, a lost GPU is
  // reported lost); runs the sweep and the tracker's probes when due; then
  // waits up to `max_wait` (in wait_slice pieces, ending early when the
  // next sweep or probe is due) for events and hands every event that came
  // to the tracker. GPUs passed to Watch are registered at the next round
  // of a Step (after the wait in progress), also in a Step that runs on.
  // Returns after handling events, after `max_wait`, or on Stop. If NVML
  // fails (the wait errs, or no event set can be made), the tracker is
  // told, the event set dropped, and it is made anew in a later Step, at
  // most every retry_interval; in between Step sleeps (Stop ends that at
  // once). NVML counts as working again when a wait on the new set succeeds
  // or times out. A wait answering NVML_ERROR_GPU_IS_LOST is no NVML
  // failure: every GPU is probed at once and the event set made anew
  // without the lost GPU, at the next Step (or after retry_interval if the
  // new set answers that again at once). A set given up (GPU_IS_LOST, or a
  // failure other than a hang) is freed only once its successor records
  // the GPUs: the events queued on it by then are handed to the tracker,
  // those that reached both sets once (TakeOver).
  void Step(absl::Duration max_wait) ABSL_LOCKS_EXCLUDED(mu_);

  // Steps until Stop; then marks itself ended (RunEnded).
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  // Makes every later Step return at once, and Run return soon: an NVML
  // call in progress (NVML cannot interrupt a wait) is left on the
  // runner's worker thread, which the process keeps until it exits
  // (util/keep_until_exit.h; the Nvml must then never be destroyed); what
  // the Step in progress already got may still reach the tracker before
  // Run returns. Without NVML call deadlines the runner runs jobs on Run's
  // thread, which then stays in an NVML wait until it ends. Thread-safe;
  // does not wait.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Waits up to `timeout` for Run to return after Stop; whether it has.
  // Thread-safe.
  bool RunEnded(absl::Duration timeout);

 private:
  struct Watched {
    GpuRef ref;
    std::vector<MigInstance> migs;  // probed by sweeps
    nvmlDevice_t handle = nullptr;  // when registered
    bool registered = false;        // on the current event set
    std::string last_error;         // of registration or sweep, logged
    // Health signals as the last read found them (nullopt: not seen).
    std::optional<bool> remap_pending, remap_failure, pages_pending;
    std::vector<bool> nvlinks;               // active, by link index
    std::vector<bool> nvlinks_down;          // went inactive while watched
    std::vector<std::string> signal_errors;  // logged once each
    std::optional<GpuSignals> signals;       // the last read acted on
    // The last read of its reset markers acted on (read while it needs a
    // reset).
    std::optional<NvmlResetMarkers> reset_markers;
  };

  // Makes the event set and registers every GPU; then, if an old set
  // waits to be taken over from, hands the events of both (TakeOver) to
  // the tracker and frees the old set. False if NVML failed (the old set,
  // if any, is kept for the next try).
  bool SetUp();
  // Tells the tracker about a hang outcome of `gpu` (or of NVML as a whole);
  // false if `out` is no hang.
  bool OnHang(const GpuRef& gpu, const ProbeOutcome& out, absl::Time now);
  // Registers `gpu` on the event set (a fresh handle by UUID).
  void Register(Watched& gpu);
  // Adds GPUs passed to Watch.
  void TakeNewGpus() ABSL_LOCKS_EXCLUDED(mu_);
  // Probes every GPU and the MIG devices of those that answer (a MIG
  // device failing NVML calls is reported to the tracker); re-registers
  // the GPUs that answer again.
  void Sweep();
  // What a sweep found, applied (and the next sweep due an interval on).
  void ApplySweep(const std::vector<SweepAnswer>& answers);
  void SweepMigs(const Watched& gpu, const std::vector<ProbeOutcome>& outs,
                 absl::Time now);
  // The sweep's targets: every GPU, asking for signals when they are due.
  std::vector<WatchedGpu> SweepTargets() const;
  // What a signal read found (monitor_signals.cc): metrics, the tracker's
  // needs-reset conditions, NVLink changes (true if a link changed).
  bool ApplySignals(Watched& gpu, const GpuSignals& signals, absl::Time now);
  // A needs-reset condition read as `now`: tells the tracker when it
  // appears (what, until) and when it goes (a reset: cleared).
  void Condition(Watched& gpu, std::optional<bool>& seen, bool now_set,
                 const std::string& what, const std::string& until,
                 const std::string& cleared, absl::Time now);
  bool ApplyNvLinks(Watched& gpu, const std::vector<bool>& links,
                    absl::Time now);
  void RunDueProbes();
  // What the wait job of this round may do after a quiet sweep: nothing
  // (QuietRounds::on false) unless options_.quiet_rounds and the monitor
  // has nothing to follow up (every GPU registered and without error, NVML
  // working). `deadline`: the Step's (real time).
  QuietRounds QuietPlan(uint64_t interrupts_seen, absl::Time deadline) const;
  // Gives up the event set; a new one is made after retry_interval. The
  // set is kept as old_set_ (what it queued until the new set records the
  // GPUs is taken then) unless `free` (a set NVML hangs on), or it is
  // freed.
  void DropEventSet(bool free);
  void Handle(const NvmlEvent& event);
  // Reads the reset markers of the GPUs that `events` make need a reset
  // (before the tracker hears of them, so that the first read is of the
  // GPU as the failure left it), then hands the events to the tracker,
  // then the reads.
  void HandleEvents(const std::vector<NvmlEvent>& events);
  // Whether `event` makes its GPU need a reset (XID 79 excepted: that GPU
  // is lost, and answering again is its reset).
  bool NeedsResetEvent(const NvmlEvent& event) const;
  // Waits on the stop flag up to `d` of real time.
  void Sleep(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);
  bool stopping() const { return stop_.load(); }

  const Nvml& nvml_;
  HealthTracker& tracker_;
  const HealthMonitorOptions options_;
  NvmlRunner runner_;  // every NVML call of the monitor

  // Owned by the stepping thread. The set is shared with the runner job
  // waiting on it (which may outlive the monitor after Stop).
  std::vector<Watched> gpus_;
  std::shared_ptr<NvmlEventSet> set_;
  // The set given up for one that is not made yet: kept until its
  // successor records the GPUs, so that no event between the two is lost.
  std::shared_ptr<NvmlEventSet> old_set_;
  absl::Time next_sweep_ = absl::InfinitePast();    // tracker clock
  absl::Time next_signals_ = absl::InfinitePast();  // tracker clock
  absl::Time next_setup_ = absl::InfinitePast();    // real time
  // The event set was made anew at once after GPU_IS_LOST, and no wait on
  // it has worked yet.
  bool remade_after_lost_ = false;

  std::atomic<bool> stop_{false};
  // Bumped by Watch and Stop: ends a wait job's quiet rounds.
  const std::shared_ptr<std::atomic<uint64_t>> interrupts_ =
      std::make_shared<std::atomic<uint64_t>>(0);
  absl::Notification run_ended_;
  absl::Mutex mu_;
  std::vector<WatchedGpu> incoming_ ABSL_GUARDED_BY(mu_);  // from Watch
};

}  // namespace gdp

#endif  // GDP_HEALTH_MONITOR_H_
