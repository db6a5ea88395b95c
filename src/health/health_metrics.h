// What health monitoring counts, in the process-wide metrics registry.
#ifndef GDP_HEALTH_HEALTH_METRICS_H_
#define GDP_HEALTH_HEALTH_METRICS_H_

#include "health/tracker.h"

namespace gdp {

// Counts one NVML health event in
// gpu_device_plugin_health_events_total{kind,xid}: kind "xid",
// "single_bit_ecc" or "double_bit_ecc"; xid the XID ("" for ECC). Every
// event NVML reported for a watched GPU counts, ignored XIDs included.
// Thread-safe.
void CountHealthEvent(const HealthEvent& event);

}  // namespace gdp

#endif  // GDP_HEALTH_HEALTH_METRICS_H_
