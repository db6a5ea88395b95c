#include "dra/dra_metrics.h"

namespace gdp::dra {

DraMetrics& DraMetrics::Get() {
  static DraMetrics* m = [] {
    metrics::Registry& r = metrics::DefaultRegistry();
    return new DraMetrics{
        r.AddCounter("gpu_device_plugin_dra_claims_total",
                     "Claims in NodePrepareResources (prepare) and "
                     "NodeUnprepareResources (unprepare) calls, by result.",
                     {"method", "result"}),
        r.AddHistogram("gpu_device_plugin_dra_request_duration_seconds",
                       "Time to answer NodePrepareResources and "
                       "NodeUnprepareResources, by method.",
                       {"method"},
                       {100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3,
                        25e-3, 100e-3, 1, 10}),
        r.AddCounter("gpu_device_plugin_dra_calls_dropped_total",
                     "Claims of NodePrepareResources (prepare) and "
                     "NodeUnprepareResources (unprepare) calls not run, by "
                     "reason: caller gone (cancelled or past its deadline "
                     "before its turn), queue full.",
                     {"method", "reason"}),
        r.AddCounter("gpu_device_plugin_dra_slice_publications_total",
                     "Attempts to make this node's ResourceSlices what the "
                     "plugin publishes, by result (ok, failed).",
                     {"result"}),
        r.AddCounter("gpu_device_plugin_dra_registrations_total",
                     "The kubelet's verdicts on our DRA plugin registration "
                     "(ok, failed).",
                     {"result"}),
        r.AddCounter("gpu_device_plugin_dra_slice_watch_restarts_total",
                     "Ends of the ResourceSlice watch, each followed by a new "
                     "watch, by reason (closed by the server, expired, "
                     "failed).",
                     {"reason"}),
        r.AddCounter("gpu_device_plugin_dra_slice_watch_backoffs_total",
                     "ResourceSlice watches started again only after a "
                     "backoff, the one before having been short.",
                     {}),
        r.AddCounter("gpu_device_plugin_dra_slice_foreign_writes_total",
                     "Changes to this node's ResourceSlices made by someone "
                     "else.",
                     {}),
        r.AddCounter("gpu_device_plugin_dra_slice_reconciles_throttled_total",
                     "Republications after someone else's changes that the "
                     "rate limit delayed.",
                     {}),
    };
  }();
  return *m;
}

}  // namespace gdp::dra
