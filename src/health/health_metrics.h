// What health monitoring counts, in the process-wide metrics registry.
#ifndef GDP_HEALTH_HEALTH_METRICS_H_
#define GDP_HEALTH_HEALTH_METRICS_H_

#include "health/signals.h"
#include "health/tracker.h"

namespace gdp {

// Counts one NVML health event in
// gpu_device_plugin_health_events_total{kind,xid}: kind "xid",
// "single_bit_ecc" or "double_bit_ecc"; xid the XID ("" for ECC). Every
// event NVML reported for a watched GPU counts, ignored XIDs included.
// Thread-safe.
void CountHealthEvent(const HealthEvent& event);

// Sets the per-GPU gauges of what a signal read of `gpu` found (labels
// gpu = NVML index, uuid); a signal that was not read leaves its gauges
// as they were:
//   gpu_device_plugin_pcie_link_degraded{gpu,uuid}: 1 when the link trains
//     below its maximum generation or width, else 0;
//   gpu_device_plugin_pcie_link_generation{gpu,uuid} and
//     gpu_device_plugin_pcie_link_width{gpu,uuid}: the current link;
//   gpu_device_plugin_throttle_slowdown{gpu,uuid,reason}: 1 while that
//     slowdown reason (kSlowdownReasonNames) holds, else 0;
//   gpu_device_plugin_remapped_rows{gpu,uuid,cause}: rows remapped after
//     "correctable" and "uncorrectable" memory errors.
// Thread-safe.
void SetSignalMetrics(const GpuRef& gpu, const GpuSignals& signals);

// Counts NVLink `link` of `gpu` going from active to inactive in
// gpu_device_plugin_nvlink_down_total{gpu,uuid,link}. Thread-safe.
void CountNvLinkDown(const GpuRef& gpu, unsigned link);

}  // namespace gdp

#endif  // GDP_HEALTH_HEALTH_METRICS_H_
