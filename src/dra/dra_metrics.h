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
  // gpu_device_plugin_dra_calls_dropped_total{method,reason}: claims of
  // NodePrepareResources ("prepare") and NodeUnprepareResources calls
  // ("unprepare") not run: "caller gone" (cancelled or past its deadline
  // before its turn) or "queue full".
  metrics::Family<metrics::Counter>& calls_dropped;
  // gpu_device_plugin_dra_slice_publications_total{result}: attempts to
  // make the pool's ResourceSlices what we publish ("ok", "failed").
  metrics::Family<metrics::Counter>& publications;
  // gpu_device_plugin_dra_registrations_total{result}: the kubelet's
  // NotifyRegistrationStatus ("ok", "failed").
  metrics::Family<metrics::Counter>& registrations;
  // gpu_device_plugin_dra_slice_watch_restarts_total{reason}: ends of the
  // ResourceSlice watch, each followed by a new one: "closed" (by the
  // server), "expired" (410: listed again), "failed".
  metrics::Family<metrics::Counter>& watch_restarts;
  // gpu_device_plugin_dra_slice_watch_backoffs_total: watches started
  // again only after a backoff, the one before having been short.
  metrics::Family<metrics::Counter>& watch_backoffs;
  // gpu_device_plugin_dra_slice_foreign_writes_total: changes to the pool's
  // slices that someone else made (seen by the watch).
  metrics::Family<metrics::Counter>& foreign_writes;
  // gpu_device_plugin_dra_slice_reconciles_throttled_total: reconciles
  // after foreign writes that the rate limit delayed.
  metrics::Family<metrics::Counter>& reconciles_throttled;

  // Registered in metrics::DefaultRegistry() at the first call. Thread-safe.
  static DraMetrics& Get();
};

}  // namespace gdp::dra

#endif  // GDP_DRA_DRA_METRICS_H_
