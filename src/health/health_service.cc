#include "health/health_service.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "health/apply.h"
#include "util/keep_until_exit.h"
#include "util/logging.h"
#include "util/thread_name.h"

namespace gdp {

HealthService::HealthService(const Nvml& nvml, XidPolicy policy,
                             HealthTrackerOptions tracker,
                             HealthStateOptions state)
    : nvml_(nvml),
      tracker_(std::move(policy), tracker),
      state_(std::move(state)) {}

HealthService::~HealthService() { Stop(); }

DeviceHealth HealthService::HealthOf(const Device& device) const {
  return tracker_.HealthOf(device);
}

bool HealthService::ApplyTo(DeviceSet& set) const {
  return ApplyHealth(tracker_, set);
}

std::string HealthService::nvml_failure() const {
  return tracker_.nvml_failure();
}

void HealthService::Restore(const NodeGpus& node,
                            std::function<void()> on_change) {
  if (!enabled()) {
    LOG_INFO("Health checks are off: the health state file is not used");
  } else {
    const HealthState saved = state_.Load();
    const std::vector<GpuRef> present = GpuRefs(node);
    tracker_.Import(saved, present, absl::Now());
    state_.Hold(saved, present);
    state_.Save(tracker_, absl::Now());
  }
  tracker_.SetOnChange([this, on_change = std::move(on_change)] {
    on_change();
    state_.Save(tracker_, absl::Now());
  });
}

void HealthService::StartMonitor(const NodeGpus& node,
                                 HealthMonitorOptions options) {
  if (!enabled()) return;
  monitor_ = std::make_unique<HealthMonitor>(nvml_, tracker_, WatchedGpus(node),
                                             options);
  monitor_thread_ = std::thread([m = monitor_.get()] {
    NameThisThread("gdp-health");
    m->Run();
  });
}

void HealthService::Follow(const NodeGpus& served, const NodeGpus& node) {
  const std::vector<GpuRef> present = GpuRefs(node);
  // A GPU left out since start-up whose saved state is held gets it now.
  const HealthState held = state_.Claim(present);
  if (!held.gpus.empty()) tracker_.Import(held, present, absl::Now());
  // A GPU that vanished from discovery and is back was reset.
  for (const GpuRef& now : present) {
    bool before =
        std::any_of(served.gpus.begin(), served.gpus.end(),
                    [&](const GpuInfo& g) { return g.uuid == now.uuid; });
    if (!before && !held.gpus.contains(now.uuid)) {
      tracker_.OnReset(now, "it reappeared in discovery", absl::Now());
    }
  }
  if (!held.gpus.empty()) state_.Save(tracker_, absl::Now());
  if (monitor_ != nullptr) monitor_->Watch(WatchedGpus(node));
}

void HealthService::ReloadState() {
  if (!state_.enabled() || !enabled()) return;
  for (const GpuRef& gpu : state_.Cleared()) {
    tracker_.OnCleared(gpu, "its saved health state was cleared", absl::Now());
  }
  state_.Save(tracker_, absl::Now());
}

void HealthService::Stop() {
  if (monitor_ != nullptr) monitor_->Stop();
  if (monitor_thread_.joinable()) {
    // With NVML call deadlines its NVML work is on a runner, which Stop
    // cancels: it returns at once, so wait for it. Without, inside an NVML
    // event wait (which NVML cannot cut short) it is left behind with what
    // it uses (main keeps the Nvml too and exits without destructors).
    if (nvml_.gate().deadline() > absl::ZeroDuration() ||
        monitor_->RunEnded(absl::Milliseconds(50))) {
      monitor_thread_.join();
    } else {
      VLOG(1, "The health monitor is in an NVML event wait; not waiting");
      monitor_thread_.detach();
      KeepUntilExit(std::move(monitor_));
    }
  }
  tracker_.SetOnChange(nullptr);
}

}  // namespace gdp
