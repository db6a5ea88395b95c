// What the DRA side counts, in the process-wide metrics registry: claims
// prepared and unprepared, their latency, ResourceSlice publications and
// kubelet registrations.
#ifndef GDP_DRA_DRA_METRICS_H_
#define GDP_DRA_DRA_METRICS_H_

#include "metrics/registry.h"

namespace gdp::dra {

struct DraMetrics {
  // gpu_device_plugin_dra_claims_total{method,result}: claims in
  // NodePrepareResources ("prepare") and NodeUnprepareResources
  // ("unprepare") calls, result "ok" or "failed".
  metrics::Family<metrics::Counter>& claims;
  // gpu_device_plugin_dra_request_duration_seconds{method}: time to answer
  // a NodePrepareResources or NodeUnprepareResources call.
  metrics::Family<metrics::Histogram>& duration;
  // gpu_device_plugin_dra_slice_publications_total{result}: attempts to
  // make the pool's ResourceSlices what we publish ("ok", "failed").
  metrics::Family<metrics::Counter>& publications;
  // gpu_device_plugin_dra_registrations_total{result}: the kubelet's
  // NotifyRegistrationStatus ("ok", "failed").
  metrics::Family<metrics::Counter>& registrations;

  // Registered in metrics::DefaultRegistry() at the first call. Thread-safe.
  static DraMetrics& Get();
};

}  // namespace gdp::dra

#endif  // GDP_DRA_DRA_METRICS_H_
