#include "health/health_metrics.h"

#include <string>

#include "metrics/registry.h"

namespace gdp {

void CountHealthEvent(const HealthEvent& event) {
  static metrics::Family<metrics::Counter>& events =
      metrics::DefaultRegistry().AddCounter(
          "gpu_device_plugin_health_events_total",
          "GPU health events from NVML, by kind (xid, single_bit_ecc, "
          "double_bit_ecc) and XID; ignored XIDs included.",
          {"kind", "xid"});
  switch (event.kind) {
    case HealthEvent::Kind::kXid:
      events.With({"xid", std::to_string(event.xid)}).Increment();
      break;
    case HealthEvent::Kind::kSingleBitEcc:
      events.With({"single_bit_ecc", ""}).Increment();
      break;
    case HealthEvent::Kind::kDoubleBitEcc:
      events.With({"double_bit_ecc", ""}).Increment();
      break;
  }
}

}  // namespace gdp
