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

void SetSignalMetrics(const GpuRef& gpu, const GpuSignals& signals) {
  metrics::Registry& r = metrics::DefaultRegistry();
  static metrics::Family<metrics::Gauge>& degraded = r.AddGauge(
      "gpu_device_plugin_pcie_link_degraded",
      "1 when the GPU's PCIe link trains below its maximum generation or "
      "width (an idle GPU may lower its generation to save power), else 0.",
      {"gpu", "uuid"});
  static metrics::Family<metrics::Gauge>& generation = r.AddGauge(
      "gpu_device_plugin_pcie_link_generation",
      "The PCIe generation the GPU's link runs at now.", {"gpu", "uuid"});
  static metrics::Family<metrics::Gauge>& width = r.AddGauge(
      "gpu_device_plugin_pcie_link_width",
      "The PCIe lanes the GPU's link runs with now.", {"gpu", "uuid"});
  static metrics::Family<metrics::Gauge>& slowdown = r.AddGauge(
      "gpu_device_plugin_throttle_slowdown",
      "1 while NVML reports this clock slowdown reason for the GPU "
      "(hw_slowdown, hw_thermal, hw_power_brake, sw_thermal), else 0.",
      {"gpu", "uuid", "reason"});
  static metrics::Family<metrics::Gauge>& remapped = r.AddGauge(
      "gpu_device_plugin_remapped_rows",
      "Memory rows the GPU has remapped, by the kind of error that caused "
      "it (correctable, uncorrectable); Ampere and later.",
      {"gpu", "uuid", "cause"});
  const std::string index = std::to_string(gpu.index);
  if (signals.pcie.has_value()) {
    degraded.With({index, gpu.uuid}).Set(PcieDegraded(*signals.pcie) ? 1 : 0);
    generation.With({index, gpu.uuid}).Set(signals.pcie->gen);
    width.With({index, gpu.uuid}).Set(signals.pcie->width);
  }
  if (signals.throttle_reasons.has_value()) {
    for (const SlowdownReason& reason : kSlowdownReasonNames) {
      slowdown.With({index, gpu.uuid, reason.name})
          .Set((*signals.throttle_reasons & reason.bit) != 0 ? 1 : 0);
    }
  }
  if (signals.remapped_rows.has_value()) {
    remapped.With({index, gpu.uuid, "correctable"})
        .Set(signals.remapped_rows->corrected);
    remapped.With({index, gpu.uuid, "uncorrectable"})
        .Set(signals.remapped_rows->uncorrectable);
  }
}

void CountNvLinkDown(const GpuRef& gpu, unsigned link) {
  static metrics::Family<metrics::Counter>& down =
      metrics::DefaultRegistry().AddCounter(
          "gpu_device_plugin_nvlink_down_total",
          "NVLinks of the GPU seen going from active to inactive.",
          {"gpu", "uuid", "link"});
  down.With({std::to_string(gpu.index), gpu.uuid, std::to_string(link)})
      .Increment();
}

}  // namespace gdp
