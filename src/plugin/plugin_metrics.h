// What the plugins count, in the process-wide metrics registry: requests
// answered and refused, their latency, registrations and kubelet restarts.
#ifndef GDP_PLUGIN_PLUGIN_METRICS_H_
#define GDP_PLUGIN_PLUGIN_METRICS_H_

#include <string>

#include "absl/status/status.h"
#include "metrics/registry.h"

namespace gdp {

struct PluginMetrics {
  // gpu_device_plugin_allocations_total{resource}: Allocate calls answered.
  metrics::Family<metrics::Counter>& allocations;
  // gpu_device_plugin_allocated_devices_total{resource}: device IDs in them.
  metrics::Family<metrics::Counter>& allocated_devices;
  // gpu_device_plugin_refused_requests_total{resource,method,reason}:
  // method "allocate" or "get_preferred_allocation", reason the gRPC code
  // in lower case (e.g. "invalid_argument", "failed_precondition").
  metrics::Family<metrics::Counter>& refused;
  // gpu_device_plugin_request_duration_seconds{resource,method}: time in
  // the handler, refused calls included.
  metrics::Family<metrics::Histogram>& duration;
  // gpu_device_plugin_registrations_total{resource,result}: result "ok" or
  // "failed".
  metrics::Family<metrics::Counter>& registrations;
  // gpu_device_plugin_kubelet_restarts_total{resource}: registrations
  // with a kubelet.sock other than the one registered with before.
  metrics::Family<metrics::Counter>& kubelet_restarts;

  // Registered in metrics::DefaultRegistry() at the first call. Thread-safe.
  static PluginMetrics& Get();
};

// The method labels.
inline constexpr char kAllocateMethod[] = "allocate";
inline constexpr char kPreferredMethod[] = "get_preferred_allocation";

// The reason label for a refusal: the status code in lower case.
std::string RefusalReason(absl::StatusCode code);

}  // namespace gdp

#endif  // GDP_PLUGIN_PLUGIN_METRICS_H_
