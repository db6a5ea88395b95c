// A GPU the health monitor watches (health/monitor.h), as its sweeps and
// NVML jobs (health/monitor_jobs.h) see it, and the events registered on it.
#ifndef GDP_HEALTH_WATCHED_GPU_H_
#define GDP_HEALTH_WATCHED_GPU_H_

#include <vector>

#include "health/probe.h"
#include "health/tracker.h"
#include "nvml/nvml.h"

namespace gdp {

// The event types registered on every GPU (masked by what it supports).
inline constexpr unsigned long long kHealthEventTypes =
    nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError |
    nvmlEventTypeSingleBitEccError;

// A GPU to watch, and the MIG devices discovery found on it, which sweeps
// probe too.
struct WatchedGpu {
  GpuRef ref;
  std::vector<MigInstance> migs;
  bool read_signals = false;  // a sweep also reads its health signals
  // The handle its events are registered with, when known: a sweep asks it
  // first and looks the GPU up by UUID only when it does not answer (NVML
  // keeps a device's handle until shutdown; a lost GPU's fails).
  nvmlDevice_t handle = nullptr;
  // A sweep also reads what a reset changes (Nvml::ResetMarkers): while a
  // unit of the GPU needs a reset (HealthTracker::AwaitsReset).
  bool read_reset_markers = false;
};

}  // namespace gdp

#endif  // GDP_HEALTH_WATCHED_GPU_H_
