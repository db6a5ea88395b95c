// The NVML work of the health monitor, as the jobs it hands to its
// NvmlRunner: plain functions of NVML, so that what a job touches is only
// what it is given (a job may outlive its caller, see nvml/runner.h).
#ifndef GDP_HEALTH_MONITOR_JOBS_H_
#define GDP_HEALTH_MONITOR_JOBS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "health/probe.h"
#include "health/signals.h"
#include "health/watched_gpu.h"
#include "nvml/nvml.h"

namespace gdp {

// What registering a GPU on an event set found.
struct Registration {
  nvmlDevice_t handle = nullptr;  // null if it was not found
  unsigned long long types = 0;   // the supported kHealthEventTypes
  absl::Status status;            // of the lookup, the query or Register
};

// Looks GPU `uuid` up and registers it on `set` for the kHealthEventTypes
// it supports (none: nothing registered, OK).
Registration RegisterOn(const Nvml& nvml, NvmlEventSet& set,
                        const std::string& uuid);

// What a sweep found for one GPU: its probe, and for one that answers, the
// probes of its MIG devices (ProbeMigDevices, in the order of its migs)
// and, when its WatchedGpu asked (read_signals, read_reset_markers), its
// health signals and its reset markers (nullopt also when that read
// failed).
struct SweepAnswer {
  ProbeOutcome gpu;
  std::vector<ProbeOutcome> migs;
  std::optional<GpuSignals> signals;
  std::optional<NvmlResetMarkers> reset_markers;
};

// Probes every GPU of `gpus`, in order, and reads the signals and reset
// markers of those that answer and ask for them (ReadSignals,
// Nvml::ResetMarkers; a read that hung makes the GPU's probe that hang).
std::vector<SweepAnswer> SweepAll(const Nvml& nvml,
                                  const std::vector<WatchedGpu>& gpus);

// Whether a sweep found nothing the monitor would act on: every GPU and
// MIG device answered, and every signal read and reset marker read is the
// same as the one the monitor last acted on (`last`, `last_markers`, by
// GPU, nullopt: none yet; SameSignals).
bool QuietSweep(
    const std::vector<SweepAnswer>& answers,
    const std::vector<std::optional<GpuSignals>>& last,
    const std::vector<std::optional<NvmlResetMarkers>>& last_markers = {});

// Reads the reset markers of each of `gpus` (nullopt where the read
// failed): a job of its own, for the GPUs an event made need a reset.
std::vector<std::optional<NvmlResetMarkers>> ReadResetMarkers(
    const Nvml& nvml, const std::vector<nvmlDevice_t>& gpus);

// Lets a wait job go on after a quiet sweep (QuietSweep) instead of
// returning: it waits a sweep interval again and sweeps again, on its own
// thread, so that an idle round wakes one thread, not the monitor's too.
// All times are real time.
struct QuietRounds {
  bool on = false;
  // No round is begun whose sweep would come later than this.
  absl::Time until = absl::InfinitePast();
  absl::Duration sweep_interval;
  // When the GPUs' signals are next due, and then how often.
  absl::Time signals_due = absl::InfiniteFuture();
  absl::Duration signals_interval;
  // The signals and reset markers the monitor last acted on, by sweep
  // target.
  std::vector<std::optional<GpuSignals>> last_signals;
  std::vector<std::optional<NvmlResetMarkers>> last_reset_markers;
  // The job ends its rounds once this differs from `interrupts_seen`
  // (bumped by HealthMonitor::Watch and Stop).
  std::shared_ptr<const std::atomic<uint64_t>> interrupts;
  uint64_t interrupts_seen = 0;
};

// Events from one wait and whatever else had arrived, and the status that
// ended it (NVML_ERROR_TIMEOUT when no more came).
struct WaitAnswer {
  std::vector<NvmlEvent> events;
  absl::Status status;  // OK when `more`
  bool more = false;    // stopped at kMaxWaitEvents: more may be waiting
  // The sweep made after a wait that saw no event, when one was asked for.
  std::optional<std::vector<SweepAnswer>> sweep;
  // Quiet rounds made before this wait (QuietRounds), each a wait that
  // timed out and a quiet sweep; the real time of the last one's sweep,
  // and of the last that read the signals (InfinitePast: none).
  int quiet_rounds = 0;
  absl::Time swept_at = absl::InfinitePast();
  absl::Time signals_read = absl::InfinitePast();
};

// The most events one WaitOn returns (an event storm is taken in parts).
inline constexpr size_t kMaxWaitEvents = 1024;

// Waits up to `wait` on `set`, then takes what else has arrived without
// waiting. If the wait saw no event and `sweep` is not empty, then sweeps
// those GPUs (SweepAll); with `quiet.on`, a quiet sweep starts another
// round (see QuietRounds) rather than ending the job.
WaitAnswer WaitOn(NvmlEventSet& set, absl::Duration wait, const Nvml& nvml,
                  std::vector<WatchedGpu> sweep, const QuietRounds& quiet);

// Takes over from event set `old` to `now`, on which the GPUs are already
// registered: NVML queues an event on every set recording its GPU and type,
// so what came before a GPU's registration on `now` is queued only on `old`
// and what came after it on both. Takes every event queued on `old`
// (waits of timeout 0 until one returns none: NVML_ERROR_TIMEOUT,
// GPU_IS_LOST or any error), then every event queued on `now` the same
// way, and returns both, `old`'s first, each event once: of a GPU's events
// from `now`, the first ones that repeat the last ones from `old` (the
// longest such run) are the same events and are dropped. Identical events
// of one GPU (same type, data and instances) arriving between the two
// takes may so be counted once. At most kMaxWaitEvents are taken from
// each set; the rest of `now`'s stay queued.
std::vector<NvmlEvent> TakeOver(NvmlEventSet& old, NvmlEventSet& now);

// Of `later` (events taken from a set after `earlier` were taken from
// another recording the same GPUs), those that are not `earlier`'s: for
// each GPU, its first events in `later` that repeat its last ones in
// `earlier`, the longest such run, are dropped. The order is kept.
std::vector<NvmlEvent> NotTakenBefore(const std::vector<NvmlEvent>& earlier,
                                      const std::vector<NvmlEvent>& later);

}  // namespace gdp

#endif  // GDP_HEALTH_MONITOR_JOBS_H_
