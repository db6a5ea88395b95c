// GPU health for the life of the daemon: one HealthTracker (keyed by
// physical GPU, so health survives config reloads, rediscoveries and
// kubelet restarts), the health state file that keeps it across restarts
// of the plugin (HealthStateStore), and the HealthMonitor thread that feeds
// the tracker from NVML. Whoever advertises devices reads it (HealthOf,
// ApplyTo) and is told of every change (Restore's `on_change`).
#ifndef GDP_HEALTH_HEALTH_SERVICE_H_
#define GDP_HEALTH_HEALTH_SERVICE_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "device/device.h"
#include "device/device_set.h"
#include "device/gpu.h"
#include "health/monitor.h"
#include "health/state_store.h"
#include "health/tracker.h"
#include "health/xid_policy.h"
#include "nvml/nvml.h"

namespace gdp {

// HealthOf, ApplyTo and nvml_failure are thread-safe; the rest is called
// by one thread (or callers holding one lock), the daemon's.
class HealthService {
 public:
  // `nvml` must outlive the service (see Stop for when it must be kept
  // longer). `policy` decides what XIDs do and whether anything is watched
  // at all (XidPolicy::monitoring_disabled); `state`: where health is kept
  // across restarts (--state-dir) and this boot's ID. Nothing runs until
  // Restore and StartMonitor.
  HealthService(const Nvml& nvml, XidPolicy policy,
                HealthTrackerOptions tracker, HealthStateOptions state);
  // Stop.
  ~HealthService();
  HealthService(const HealthService&) = delete;
  HealthService& operator=(const HealthService&) = delete;

  const XidPolicy& policy() const { return tracker_.policy(); }
  // Whether health is watched: false when every health check is off (no
  // monitor, no state file, every device stays healthy).
  bool enabled() const { return !policy().monitoring_disabled(); }

  // Thread-safe: what `device` should advertise (HealthTracker::HealthOf).
  DeviceHealth HealthOf(const Device& device) const;
  // Thread-safe: sets every device of `set` to what HealthOf says,
  // publishing one new list if anything changed; whether it did.
  // REQUIRES: as ApplyHealth (health/apply.h), callers serialize the
  // pushes into one set.
  bool ApplyTo(DeviceSet& set) const;
  // Thread-safe: why the monitor counts NVML as failed as a whole, or ""
  // while it works.
  std::string nvml_failure() const;

  // When enabled, restores the health saved in the state file by an
  // earlier run in this boot for the GPUs in `node`, keeps the saved
  // records of GPUs not in `node` for Follow (HealthStateStore::Hold) and
  // writes the file back (Load, HealthTracker::Import, Save); when not,
  // logs that the file is not used. From then on, after every change of
  // any device's health, `on_change` runs and then the file is written if
  // the state differs. `on_change` runs on the thread whose call made the
  // change (the monitor's, or the caller of Follow or ReloadState), one
  // call at a time; it may call the thread-safe methods, nothing else, and
  // no lock it takes may be held while calling Follow or ReloadState.
  // Call once, before StartMonitor.
  void Restore(const NodeGpus& node, std::function<void()> on_change);

  // When enabled, starts the monitor on its own thread ("gdp-health"),
  // watching the GPUs of `node` (WatchedGpus) with `options`. Call once,
  // after Restore.
  void StartMonitor(const NodeGpus& node, HealthMonitorOptions options);

  // `node` is served now in place of `served`: each GPU of `node` whose
  // saved record Restore kept (it was not found at start) gets it
  // (HealthStateStore::Claim, HealthTracker::Import) and the file is
  // written; each other GPU of `node` not in `served` (by UUID) was reset
  // ("it reappeared in discovery"); and the monitor also watches `node`'s
  // GPUs (it never drops one).
  void Follow(const NodeGpus& served, const NodeGpus& node);

  // Reads the state file again (SIGHUP), when enabled and a file is kept:
  // GPUs whose saved state the operator cleared (`gpu-device-plugin
  // health-state clear`) are made healthy and their failures forgotten;
  // then the file is rewritten with the tracker's state if it differs.
  void ReloadState();

  // Stops the monitor, then `on_change` (after Stop it does not run).
  // With NVML call deadlines the monitor returns at once (its NVML work
  // left on a runner's worker, kept until exit); without, a monitor
  // blocked in an NVML event wait is not waited for but kept
  // (KeepUntilExit). Either way what is kept still uses the Nvml, which
  // must then be kept too, never destroyed. Later calls do nothing.
  void Stop();

 private:
  const Nvml& nvml_;
  HealthTracker tracker_;
  // The health state file; saved from the tracker's change callback.
  HealthStateStore state_;
  std::unique_ptr<HealthMonitor> monitor_;
  std::thread monitor_thread_;
};

}  // namespace gdp

#endif  // GDP_HEALTH_HEALTH_SERVICE_H_
