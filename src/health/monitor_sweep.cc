// HealthMonitor: sweeps (every GPU and its MIG devices probed, the signals
// read when due), what they find, the tracker's due probes, and the plan
// for a wait job's quiet rounds (declared in monitor.h).
#include <algorithm>
#include <utility>

#include "health/monitor.h"
#include "health/monitor_jobs.h"
#include "health/probe.h"
#include "util/logging.h"

namespace gdp {

void HealthMonitor::Sweep() {
  next_sweep_ = options_.clock() + options_.sweep_interval;
  const std::vector<WatchedGpu> targets = SweepTargets();
  // A call that hangs costs one deadline; the sweep is then made again at
  // once, when calls about the hung GPU fail at once (at most once per GPU
  // and once for NVML as a whole).
  absl::StatusOr<std::vector<SweepAnswer>> answers;
  for (size_t tries = 0; tries <= targets.size() + 1; ++tries) {
    answers = runner_.Call<std::vector<SweepAnswer>>(
        [&nvml = nvml_, targets] { return SweepAll(nvml, targets); });
    if (answers.ok() || !IsNvmlHang(answers.status())) break;
  }
  if (!answers.ok() || stopping()) return;
  ApplySweep(*answers);
}

std::vector<WatchedGpu> HealthMonitor::SweepTargets() const {
  const bool signals = options_.clock() >= next_signals_;
  std::vector<WatchedGpu> targets;
  for (const Watched& gpu : gpus_) {
    targets.push_back({gpu.ref, gpu.migs, signals, gpu.handle,
                       tracker_.AwaitsReset(gpu.ref.uuid)});
  }
  return targets;
}

void HealthMonitor::ApplySweep(const std::vector<SweepAnswer>& answers) {
  const absl::Time now = options_.clock();
  next_sweep_ = now + options_.sweep_interval;
  bool topology_changed = false;
  for (size_t i = 0; i < gpus_.size() && i < answers.size(); ++i) {
    Watched& gpu = gpus_[i];
    const ProbeOutcome& out = answers[i].gpu;
    if (answers[i].signals.has_value()) {
      next_signals_ = now + options_.signals_interval;
    }
    switch (out.result) {
      case ProbeResult::kPass:
        tracker_.OnGpuAnswers(gpu.ref, now);
        SweepMigs(gpu, answers[i].migs, now);
        if (answers[i].signals.has_value()) {
          if (ApplySignals(gpu, *answers[i].signals, now)) {
            topology_changed = true;
          }
          gpu.signals = *answers[i].signals;
        }
        if (const auto& m = answers[i].reset_markers; m.has_value()) {
          tracker_.OnResetMarkers(gpu.ref, *m, now);
          gpu.reset_markers = *m;
        }
        if (!gpu.registered) {
          Register(gpu);
        } else if (!gpu.last_error.empty()) {
          LOG_INFO("GPU {} {}: answers probes again", gpu.ref.index,
                   gpu.ref.uuid);
          gpu.last_error.clear();
        }
        break;
      case ProbeResult::kLost:
        gpu.registered = false;  // register again once it answers
        tracker_.OnGpuLost(gpu.ref, out.detail, now);
        break;
      case ProbeResult::kFail:
      case ProbeResult::kGone:
        if (OnHang(gpu.ref, out, now)) {
          gpu.last_error = out.detail;
          break;
        }
        // Not lost, so not unhealthy by itself; logged once per error.
        if (gpu.last_error != out.detail) {
          gpu.last_error = out.detail;
          LOG_WARN("GPU {} {}: probe failed: {}", gpu.ref.index, gpu.ref.uuid,
                   out.detail);
        }
        break;
    }
  }
  if (topology_changed && options_.on_topology_change) {
    options_.on_topology_change();
  }
}

void HealthMonitor::SweepMigs(const Watched& gpu,
                              const std::vector<ProbeOutcome>& outs,
                              absl::Time now) {
  for (size_t k = 0; k < outs.size() && k < gpu.migs.size(); ++k) {
    const ProbeTarget target{gpu.ref, gpu.migs[k].gi, gpu.migs[k].ci};
    switch (outs[k].result) {
      case ProbeResult::kFail:
        if (outs[k].hung_all) {
          tracker_.OnNvmlFailure(outs[k].detail, now);
        } else {
          tracker_.OnMigProbeFailed(target, outs[k].detail, now);
        }
        break;
      case ProbeResult::kGone:
        // The layout changed since discovery; discovery will follow.
        VLOG(1, "GPU {} {}: no MIG device GI {} CI {} any more ({})",
             gpu.ref.index, gpu.ref.uuid, target.gi, target.ci, outs[k].detail);
        break;
      case ProbeResult::kPass:
      case ProbeResult::kLost:  // the next sweep finds the GPU lost
        break;
    }
  }
}

void HealthMonitor::RunDueProbes() {
  const std::vector<ProbeTarget> due = tracker_.DueProbes(options_.clock());
  if (due.empty()) return;
  absl::StatusOr<std::vector<ProbeOutcome>> outs =
      runner_.Call<std::vector<ProbeOutcome>>([&nvml = nvml_, due] {
        std::vector<ProbeOutcome> out;
        for (const ProbeTarget& target : due)
          out.push_back(Probe(nvml, target));
        return out;
      });
  // A hang: the next round probes again, and the hung GPU fails at once.
  if (!outs.ok() || stopping()) return;
  const absl::Time now = options_.clock();
  for (size_t i = 0; i < due.size(); ++i) {
    const ProbeTarget& target = due[i];
    const ProbeOutcome& out = (*outs)[i];
    if (out.result == ProbeResult::kLost) {
      auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Watched& w) {
        return w.ref.uuid == target.gpu.uuid;
      });
      if (it != gpus_.end()) it->registered = false;
    }
    if (target.gi == kNvmlAllInstances && target.ci == kNvmlAllInstances) {
      OnHang(target.gpu, out, now);
    }
    tracker_.OnProbe(target, out.result, out.detail, now);
  }
}

QuietRounds HealthMonitor::QuietPlan(uint64_t interrupts_seen,
                                     absl::Time deadline) const {
  QuietRounds q;
  if (!options_.quiet_rounds ||
      options_.wait_slice != absl::InfiniteDuration() ||
      tracker_.nvml_failed()) {
    return q;
  }
  for (const Watched& gpu : gpus_) {
    if (!gpu.registered || !gpu.last_error.empty()) return q;
    q.last_signals.push_back(gpu.signals);
    q.last_reset_markers.push_back(gpu.reset_markers);
  }
  q.on = true;
  // The tracker's clock is the real one here.
  q.until = std::min(deadline, tracker_.NextProbe());
  q.sweep_interval = options_.sweep_interval;
  q.signals_due = next_signals_;
  q.signals_interval = options_.signals_interval;
  q.interrupts = interrupts_;
  q.interrupts_seen = interrupts_seen;
  return q;
}

}  // namespace gdp
