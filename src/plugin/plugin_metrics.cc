#include "plugin/plugin_metrics.h"

#include "absl/strings/ascii.h"

namespace gdp {

PluginMetrics& PluginMetrics::Get() {
  static PluginMetrics* m = [] {
    metrics::Registry& r = metrics::DefaultRegistry();
    return new PluginMetrics{
        r.AddCounter("gpu_device_plugin_allocations_total",
                     "Allocate calls answered, by resource.", {"resource"}),
        r.AddCounter("gpu_device_plugin_allocated_devices_total",
                     "Device IDs handed out by Allocate, by resource.",
                     {"resource"}),
        r.AddCounter(
            "gpu_device_plugin_refused_requests_total",
            "Allocate and GetPreferredAllocation calls refused, by resource, "
            "method and gRPC code.",
            {"resource", "method", "reason"}),
        r.AddHistogram(
            "gpu_device_plugin_request_duration_seconds",
            "Time to answer Allocate and GetPreferredAllocation in the "
            "plugin, by resource and method.",
            {"resource", "method"},
            {25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3,
             25e-3, 100e-3, 1}),
        r.AddCounter("gpu_device_plugin_registrations_total",
                     "Registrations with the kubelet, by resource and result "
                     "(ok or failed).",
                     {"resource", "result"}),
        r.AddCounter("gpu_device_plugin_kubelet_restarts_total",
                     "Kubelet restarts seen (registered again with a new "
                     "kubelet.sock), by resource.",
                     {"resource"}),
    };
  }();
  return *m;
}

std::string RefusalReason(absl::StatusCode code) {
  return absl::AsciiStrToLower(absl::StatusCodeToString(code));
}

}  // namespace gdp
