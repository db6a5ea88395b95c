#include "health/monitor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "health/health_metrics.h"
#include "health/monitor_jobs.h"
#include "health/probe.h"
#include "util/keep_until_exit.h"
#include "util/logging.h"

namespace gdp {

std::vector<WatchedGpu> WatchedGpus(const NodeGpus& node) {
  std::vector<WatchedGpu> out;
  for (const GpuInfo& g : node.gpus) {
    WatchedGpu w{{g.uuid, g.index}, {}};
    for (const MigInfo& m : g.migs) w.migs.push_back({m.gi, m.ci});
    out.push_back(std::move(w));
  }
  return out;
}

HealthMonitor::HealthMonitor(const Nvml& nvml, HealthTracker& tracker,
                             std::vector<WatchedGpu> gpus,
                             HealthMonitorOptions options)
    : nvml_(nvml),
      tracker_(tracker),
      options_(std::move(options)),
      runner_(nvml) {
  incoming_ = std::move(gpus);
}

HealthMonitor::~HealthMonitor() {
  // Freeing the set is an NVML call too: not made while NVML hangs.
  if (!nvml_.Hangs().empty()) {
    if (set_ != nullptr) KeepUntilExit(std::move(set_));
    if (old_set_ != nullptr) KeepUntilExit(std::move(old_set_));
  }
}

void HealthMonitor::Watch(std::vector<WatchedGpu> gpus) {
  absl::MutexLock lock(&mu_);
  incoming_.insert(incoming_.end(), std::make_move_iterator(gpus.begin()),
                   std::make_move_iterator(gpus.end()));
  interrupts_->fetch_add(1);
}

void HealthMonitor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  interrupts_->fetch_add(1);
  runner_.Cancel();
}

bool HealthMonitor::RunEnded(absl::Duration timeout) {
  return run_ended_.WaitForNotificationWithTimeout(timeout);
}

void HealthMonitor::Sleep(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  auto stopped = [this] { return stop_.load(); };
  mu_.AwaitWithTimeout(absl::Condition(&stopped), d);
}

void HealthMonitor::TakeNewGpus() {
  std::vector<WatchedGpu> incoming;
  {
    absl::MutexLock lock(&mu_);
    incoming.swap(incoming_);
  }
  for (WatchedGpu& gpu : incoming) {
    auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Watched& w) {
      return w.ref.uuid == gpu.ref.uuid;
    });
    if (it != gpus_.end()) {
      it->ref.index = gpu.ref.index;
      it->migs = std::move(gpu.migs);
      continue;
    }
    Watched w;
    w.ref = std::move(gpu.ref);
    w.migs = std::move(gpu.migs);
    gpus_.push_back(std::move(w));
    if (set_ != nullptr) Register(gpus_.back());
  }
}

bool HealthMonitor::OnHang(const GpuRef& gpu, const ProbeOutcome& out,
                           absl::Time now) {
  if (!out.hung) return false;
  if (out.hung_all) {
    tracker_.OnNvmlFailure(out.detail, now);
  } else {
    tracker_.OnGpuHung(gpu, out.detail, now);
  }
  return true;
}

void HealthMonitor::Register(Watched& gpu) {
  const absl::Time now = options_.clock();
  gpu.registered = false;
  absl::StatusOr<Registration> run = runner_.Call<Registration>(
      [&nvml = nvml_, set = set_, uuid = gpu.ref.uuid] {
        return RegisterOn(nvml, *set, uuid);
      });
  if (stopping()) return;
  const Registration r =
      run.ok() ? *run : Registration{nullptr, 0, run.status()};
  const absl::Status& s = r.status;
  if (r.handle != nullptr) {
    gpu.handle = r.handle;
    if (r.types != kHealthEventTypes) {
      LOG_WARN(
          "GPU {} {}: reports only event types {:#x} of {:#x} "
          "(XID, double-bit ECC, single-bit ECC); the rest is not watched",
          gpu.ref.index, gpu.ref.uuid, r.types, kHealthEventTypes);
    }
  }
  if (OnHang(gpu.ref, OutcomeOf(s), now)) return;
  switch (NvmlCode(s)) {
    case NVML_SUCCESS:
      gpu.registered = true;
      gpu.last_error.clear();
      VLOG(1, "GPU {} {}: watching health events", gpu.ref.index, gpu.ref.uuid);
      return;
    case NVML_ERROR_NOT_SUPPORTED:
      // As NVIDIA's plugin: too old for health events, still usable.
      gpu.registered = true;
      LOG_WARN("GPU {} {}: no health events ({}); watched by probes only",
               gpu.ref.index, gpu.ref.uuid, s.message());
      return;
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_NOT_FOUND:
      tracker_.OnGpuLost(gpu.ref, std::string(s.message()), now);
      return;
    default:
      if (gpu.last_error != s.message()) {
        gpu.last_error = std::string(s.message());
        LOG_ERROR(
            "GPU {} {}: cannot watch health events ({}); trying again at "
            "every sweep",
            gpu.ref.index, gpu.ref.uuid, s.message());
      }
      return;
  }
}

bool HealthMonitor::SetUp() {
  absl::StatusOr<absl::StatusOr<std::unique_ptr<NvmlEventSet>>> run =
      runner_.Call<absl::StatusOr<std::unique_ptr<NvmlEventSet>>>(
          [&nvml = nvml_] { return nvml.CreateEventSet(); });
  if (stopping()) return false;
  const absl::Time now = options_.clock();
  absl::StatusOr<std::unique_ptr<NvmlEventSet>> set =
      run.ok() ? *std::move(run) : run.status();
  if (!set.ok()) {
    tracker_.OnNvmlFailure(
        IsNvmlHang(set.status())
            ? std::string(set.status().message())
            : absl::StrCat("NVML failed: ", set.status().message()),
        now);
    return false;
  }
  // NVML counts as working again only once a wait succeeds.
  set_ = std::shared_ptr<NvmlEventSet>(*std::move(set));
  for (Watched& gpu : gpus_) Register(gpu);
  next_sweep_ = now + options_.sweep_interval;
  if (old_set_ != nullptr && !stopping()) {
    // The job frees the old set when it ends (or leaves it, if it hangs).
    absl::StatusOr<std::vector<NvmlEvent>> events =
        runner_.Call<std::vector<NvmlEvent>>(
            [old = std::move(old_set_), now_set = set_]() mutable {
              std::vector<NvmlEvent> out = TakeOver(*old, *now_set);
              old.reset();
              return out;
            });
    old_set_ = nullptr;
    if (stopping()) return true;
    if (events.ok() && !events->empty()) HandleEvents(*events);
  }
  return true;
}

void HealthMonitor::Handle(const NvmlEvent& event) {
  const absl::Time now = options_.clock();
  auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Watched& w) {
    return w.handle != nullptr && w.handle == event.device;
  });
  if (it == gpus_.end()) {
    LOG_WARN("NVML event type {:#x} (data {}) for a GPU not watched; ignored",
             event.type, event.data);
    return;
  }
  HealthEvent e;
  e.gi = event.gpu_instance_id;
  e.ci = event.compute_instance_id;
  switch (event.type) {
    case nvmlEventTypeXidCriticalError:
      e.kind = HealthEvent::Kind::kXid;
      e.xid = event.data;
      break;
    case nvmlEventTypeDoubleBitEccError:
      e.kind = HealthEvent::Kind::kDoubleBitEcc;
      break;
    case nvmlEventTypeSingleBitEccError:
      e.kind = HealthEvent::Kind::kSingleBitEcc;
      break;
    default:
      VLOG(1, "GPU {} {}: NVML event type {:#x} ignored", it->ref.index,
           it->ref.uuid, event.type);
      return;
  }
  CountHealthEvent(e);
  tracker_.OnEvent(it->ref, e, now);
}

bool HealthMonitor::NeedsResetEvent(const NvmlEvent& event) const {
  if (event.type == nvmlEventTypeXidCriticalError) {
    return event.data != kXidFallenOffTheBus &&
           tracker_.policy().Decide(event.data).cls == XidClass::kNeedsReset;
  }
  return event.type == nvmlEventTypeDoubleBitEccError &&
         tracker_.policy().DecideEcc(true).cls == XidClass::kNeedsReset;
}

void HealthMonitor::HandleEvents(const std::vector<NvmlEvent>& events) {
  std::vector<nvmlDevice_t> handles;
  for (const NvmlEvent& event : events) {
    if (event.device != nullptr && NeedsResetEvent(event) &&
        std::find(handles.begin(), handles.end(), event.device) ==
            handles.end()) {
      handles.push_back(event.device);
    }
  }
  absl::StatusOr<std::vector<std::optional<NvmlResetMarkers>>> reads;
  if (!handles.empty()) {
    // A hang here costs one deadline; the next sweep finds the GPU.
    reads = runner_.Call<std::vector<std::optional<NvmlResetMarkers>>>(
        [&nvml = nvml_, handles] { return ReadResetMarkers(nvml, handles); });
    if (stopping()) return;
  }
  for (const NvmlEvent& event : events) Handle(event);
  if (!reads.ok()) return;
  const absl::Time now = options_.clock();
  for (size_t i = 0; i < handles.size() && i < reads->size(); ++i) {
    if (!(*reads)[i].has_value()) continue;
    auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Watched& w) {
      return w.handle == handles[i];
    });
    if (it == gpus_.end()) continue;
    tracker_.OnResetMarkers(it->ref, *(*reads)[i], now);
    it->reset_markers = (*reads)[i];
  }
}

void HealthMonitor::Step(absl::Duration max_wait) {
  const absl::Time deadline = absl::Now() + max_wait;
  if (stopping()) return;
  TakeNewGpus();
  if (set_ == nullptr) {
    if (absl::Now() < next_setup_ || !SetUp()) {
      next_setup_ =
          std::max(next_setup_, absl::Now() + options_.retry_interval);
      Sleep(std::min(next_setup_, deadline) - absl::Now());
      return;
    }
  }
  while (!stopping()) {
    // GPUs passed to Watch since the last round: a Step of Run never
    // returns while NVML is idle.
    const uint64_t interrupts = interrupts_->load();
    TakeNewGpus();
    if (options_.clock() >= next_sweep_) Sweep();
    RunDueProbes();
    const absl::Time clock_now = options_.clock();
    const absl::Duration until_due =
        std::min(next_sweep_, tracker_.NextProbe()) - clock_now;
    const absl::Duration left =
        std::max(deadline - absl::Now(), absl::ZeroDuration());
    // Due work was just done; a due time still past would be a tracker
    // that did not move it on: never spin on it.
    const absl::Duration wait =
        std::min({left, std::max(until_due, absl::Milliseconds(1)),
                  options_.wait_slice});
    // A wait that lasts until the sweep is due sweeps in the same job
    // when it saw no event: one wakeup of each thread per idle round.
    std::vector<WatchedGpu> sweep;
    QuietRounds quiet;
    if (next_sweep_ - clock_now <= wait) {
      sweep = SweepTargets();
      quiet = QuietPlan(interrupts, deadline);
    }
    absl::StatusOr<WaitAnswer> answer = runner_.Call<WaitAnswer>(
        [&nvml = nvml_, set = set_, wait, sweep = std::move(sweep),
         quiet = std::move(quiet)] {
          return WaitOn(*set, wait, nvml, sweep, quiet);
        });
    // Stopped during the wait: the caller may be tearing the tracker down.
    if (stopping()) return;
    if (!answer.ok() && IsNvmlHang(answer.status()) &&
        !IsNvmlHangOfAll(answer.status())) {
      Sweep();  // the hang was the sweep's: find the GPU
      continue;
    }
    if (!answer.ok()) {
      WaitAnswer failed;
      failed.status = answer.status();
      answer = std::move(failed);
    }
    if (answer->quiet_rounds > 0) {
      // Waits timed out and sweeps found nothing: only the times move on.
      remade_after_lost_ = false;
      tracker_.OnNvmlWorks(options_.clock());
      next_sweep_ = answer->swept_at + options_.sweep_interval;
      if (answer->signals_read != absl::InfinitePast()) {
        next_signals_ = answer->signals_read + options_.signals_interval;
      }
    }
    if (answer->sweep.has_value()) ApplySweep(*answer->sweep);
    if (!answer->events.empty()) {
      remade_after_lost_ = false;
      tracker_.OnNvmlWorks(options_.clock());
      HandleEvents(answer->events);
      if (stopping()) return;
      if (answer->more || NvmlCode(answer->status) == NVML_ERROR_TIMEOUT) {
        return;
      }
    }
    const absl::Status& status = answer->status;
    switch (NvmlCode(status)) {
      case NVML_ERROR_TIMEOUT:
        remade_after_lost_ = false;
        tracker_.OnNvmlWorks(options_.clock());
        if (absl::Now() >= deadline) return;
        continue;
      case NVML_ERROR_GPU_IS_LOST: {
        // A watched GPU fell off the bus: find which now (the sweep marks
        // it unregistered), and watch the others on a new event set at
        // once; if the new set answers this again before any wait worked,
        // only after retry_interval, so that it cannot spin.
        Sweep();
        const bool again = remade_after_lost_;
        DropEventSet(/*free=*/false);
        if (!again) {
          next_setup_ = absl::InfinitePast();
          remade_after_lost_ = true;
        }
        return;
      }
      default:
        tracker_.OnNvmlFailure(
            IsNvmlHang(status)
                ? std::string(status.message())
                : absl::StrCat("NVML event wait failed: ", status.message()),
            options_.clock());
        DropEventSet(/*free=*/IsNvmlHang(status));
        return;
    }
  }
}

void HealthMonitor::DropEventSet(bool free) {
  // Freed on the runner: a free that hangs is given up like any call.
  if (free || old_set_ != nullptr) {
    std::shared_ptr<NvmlEventSet> gone =
        free ? std::move(set_) : std::move(old_set_);
    if (gone != nullptr) {
      (void)runner_.Run([set = std::move(gone)]() mutable { set.reset(); });
    }
  }
  if (set_ != nullptr) old_set_ = std::move(set_);
  set_ = nullptr;
  next_setup_ = absl::Now() + options_.retry_interval;
  for (Watched& gpu : gpus_) gpu.registered = false;
}

void HealthMonitor::Run() {
  while (!stopping()) Step(absl::InfiniteDuration());
  run_ended_.Notify();
}

}  // namespace gdp
