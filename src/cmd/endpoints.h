// The daemon's HTTP endpoints (--metrics-address): /metrics with every
// metric of the process plus the running plugins' device counts, and the
// probes a DaemonSet points at:
//   /healthz fails (503) while NVML is not loaded or is failing, or while
//     some resource is not registered with a live kubelet (registered, and
//     the kubelet holds its ListAndWatch stream: when the kubelet dies the
//     stream ends), so a liveness probe restarts a plugin stuck that way;
//   /readyz fails until every resource is registered (the rules: probes.h).
// Metric names and labels: docs/metrics.md.
#ifndef GDP_CMD_ENDPOINTS_H_
#define GDP_CMD_ENDPOINTS_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cmd/daemon.h"
#include "metrics/http_server.h"

namespace gdp {

// Thread-safe.
class Endpoints {
 public:
  // Serves on `address` ("host:port" or ":port"); "" serves nothing (the
  // methods still work). Start before NVML is opened, so /healthz answers
  // while NVML is retried.
  // Result on failure: the address and why it cannot be served.
  static absl::StatusOr<std::unique_ptr<Endpoints>> Start(
      const std::string& address);

  // Stops serving.
  ~Endpoints();

  // NVML could not be loaded (or showed no GPU): /healthz says `error`.
  void NvmlNotLoaded(const absl::Status& error) ABSL_LOCKS_EXCLUDED(mu_);

  // While alive, the probes and /metrics read `daemon` (which must outlive
  // it: declare it after the Daemon).
  class Serving {
   public:
    Serving(Endpoints& endpoints, const Daemon* daemon);
    ~Serving();
    Serving(const Serving&) = delete;
    Serving& operator=(const Serving&) = delete;

   private:
    Endpoints& endpoints_;
  };

 private:
  Endpoints() = default;
  absl::Status Healthz() const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Readyz() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::string> ReadyzNotes() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<metrics::FamilySnapshot> Collect() const ABSL_LOCKS_EXCLUDED(mu_);
  // Why nothing is served yet: NVML is not loaded (with its error).
  absl::Status NotServing() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  const Daemon* daemon_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Status nvml_error_ ABSL_GUARDED_BY(mu_);
  // The HTTP server (none without an address), set before collector_ is
  // registered and reset after it is removed, so Collect may read it.
  std::unique_ptr<metrics::HttpServer> server_;
  uint64_t collector_ = 0;
};

// Counts a config reload in gpu_device_plugin_config_reloads_total
// (result "ok" or "failed"). Thread-safe.
void CountConfigReload(const absl::Status& result);

}  // namespace gdp

#endif  // GDP_CMD_ENDPOINTS_H_
