#include "health/monitor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "health/health_metrics.h"
#include "health/probe.h"
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
    : nvml_(nvml), tracker_(tracker), options_(std::move(options)) {
  incoming_ = std::move(gpus);
}

HealthMonitor::~HealthMonitor() = default;

void HealthMonitor::Watch(std::vector<WatchedGpu> gpus) {
  absl::MutexLock lock(&mu_);
  incoming_.insert(incoming_.end(), std::make_move_iterator(gpus.begin()),
                   std::make_move_iterator(gpus.end()));
}

void HealthMonitor::Stop() {
  absl::MutexLock lock(&mu_);
  stop_ = true;
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

void HealthMonitor::Register(Watched& gpu) {
  const absl::Time now = options_.clock();
  gpu.registered = false;
  absl::StatusOr<nvmlDevice_t> handle = nvml_.DeviceByUuid(gpu.ref.uuid);
  absl::StatusOr<unsigned long long> supported =
      handle.ok() ? nvml_.SupportedEventTypes(*handle) : handle.status();
  absl::Status s = supported.status();
  if (supported.ok()) {
    gpu.handle = *handle;
    const unsigned long long types = *supported & kHealthEventTypes;
    if (types != kHealthEventTypes) {
      LOG_WARN(
          "GPU {} {}: reports only event types {:#x} of {:#x} "
          "(XID, double-bit ECC, single-bit ECC); the rest is not watched",
          gpu.ref.index, gpu.ref.uuid, types, kHealthEventTypes);
    }
    s = types == 0 ? absl::OkStatus() : set_->Register(*handle, types);
  }
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
  const absl::Time now = options_.clock();
  absl::StatusOr<std::unique_ptr<NvmlEventSet>> set = nvml_.CreateEventSet();
  if (!set.ok()) {
    tracker_.OnNvmlFailure(
        absl::StrCat("NVML failed: ", set.status().message()), now);
    return false;
  }
  // NVML counts as working again only once a wait succeeds.
  set_ = *std::move(set);
  for (Watched& gpu : gpus_) Register(gpu);
  next_sweep_ = now + options_.sweep_interval;
  return true;
}

void HealthMonitor::Sweep() {
  const absl::Time now = options_.clock();
  next_sweep_ = now + options_.sweep_interval;
  for (Watched& gpu : gpus_) {
    const ProbeOutcome out = Probe(nvml_, ProbeTarget{gpu.ref});
    switch (out.result) {
      case ProbeResult::kPass:
        tracker_.OnGpuAnswers(gpu.ref, now);
        SweepMigs(gpu, now);
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
        // Not lost, so not unhealthy by itself; logged once per error.
        if (gpu.last_error != out.detail) {
          gpu.last_error = out.detail;
          LOG_WARN("GPU {} {}: probe failed: {}", gpu.ref.index, gpu.ref.uuid,
                   out.detail);
        }
        break;
    }
  }
}

void HealthMonitor::SweepMigs(const Watched& gpu, absl::Time now) {
  if (gpu.migs.empty()) return;
  const std::vector<ProbeOutcome> outs =
      ProbeMigDevices(nvml_, gpu.ref, gpu.migs);
  for (size_t k = 0; k < outs.size(); ++k) {
    const ProbeTarget target{gpu.ref, gpu.migs[k].gi, gpu.migs[k].ci};
    switch (outs[k].result) {
      case ProbeResult::kFail:
        tracker_.OnMigProbeFailed(target, outs[k].detail, now);
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
  const absl::Time now = options_.clock();
  for (const ProbeTarget& target : tracker_.DueProbes(now)) {
    const ProbeOutcome out = Probe(nvml_, target);
    if (out.result == ProbeResult::kLost) {
      auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Watched& w) {
        return w.ref.uuid == target.gpu.uuid;
      });
      if (it != gpus_.end()) it->registered = false;
    }
    tracker_.OnProbe(target, out.result, out.detail, now);
  }
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
    absl::StatusOr<NvmlEvent> event = set_->Wait(wait);
    // Stopped during the wait: the caller may be tearing the tracker down.
    if (stopping()) return;
    if (event.ok()) {
      remade_after_lost_ = false;
      tracker_.OnNvmlWorks(options_.clock());
      Handle(*event);
      // Whatever else has arrived, without waiting.
      while ((event = set_->Wait(absl::ZeroDuration())).ok()) Handle(*event);
      if (NvmlCode(event.status()) == NVML_ERROR_TIMEOUT) return;
    }
    switch (NvmlCode(event.status())) {
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
        DropEventSet();
        if (!again) {
          next_setup_ = absl::InfinitePast();
          remade_after_lost_ = true;
        }
        return;
      }
      default:
        tracker_.OnNvmlFailure(
            absl::StrCat("NVML event wait failed: ", event.status().message()),
            options_.clock());
        DropEventSet();
        return;
    }
  }
}

void HealthMonitor::DropEventSet() {
  set_.reset();
  next_setup_ = absl::Now() + options_.retry_interval;
  for (Watched& gpu : gpus_) gpu.registered = false;
}

void HealthMonitor::Run() {
  while (!stopping()) Step(absl::InfiniteDuration());
  run_ended_.Notify();
}

}  // namespace gdp
