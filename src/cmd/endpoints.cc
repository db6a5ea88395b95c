#include "cmd/endpoints.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/probes.h"
#include "plugin/plugin_metrics.h"
#include "util/logging.h"

namespace gdp {
namespace {

std::optional<DraProbe> ToProbe(const std::optional<dra::DraStatus>& s) {
  if (!s.has_value()) return std::nullopt;
  return DraProbe{s->serving, s->registered, s->registration_error,
                  s->slices.in_sync, s->slices.last_error};
}

metrics::FamilySnapshot Gauge(const std::string& name, const std::string& help,
                              std::vector<std::string> labels) {
  return {name, help, metrics::Type::kGauge, std::move(labels)};
}

}  // namespace

absl::StatusOr<std::unique_ptr<Endpoints>> Endpoints::Start(
    const std::string& address) {
  std::unique_ptr<Endpoints> e(new Endpoints);
  metrics::Registry& registry = metrics::DefaultRegistry();
  static metrics::Family<metrics::Gauge>& build_info =
      registry.AddGauge("gpu_device_plugin_build_info",
                        "Always 1; the version built.", {"version"});
  build_info.With({GDP_VERSION}).Set(1);
  PluginMetrics::Get();  // its families show (empty) from the start
  if (address.empty()) return e;
  Endpoints* self = e.get();
  auto server = metrics::HttpServer::Start(
      address, registry,
      {.healthz = [self] { return self->Healthz(); },
       .readyz = [self] { return self->Readyz(); },
       .readyz_notes = [self] { return self->ReadyzNotes(); },
       .connections = {}});
  if (!server.ok()) return server.status();
  e->server_ = *std::move(server);
  // After server_ is set: the registry's lock orders it before every
  // Collect (a scrape before this shows the other families only).
  e->collector_ = registry.AddCollector([self] { return self->Collect(); });
  LOG_INFO("Serving /metrics, /healthz and /readyz on {}", address);
  return e;
}

Endpoints::~Endpoints() {
  // First: once it returns no Collect runs, so server_ can go.
  if (collector_ != 0) metrics::DefaultRegistry().RemoveCollector(collector_);
  server_.reset();
}

void Endpoints::NvmlNotLoaded(const absl::Status& error) {
  absl::MutexLock lock(&mu_);
  nvml_error_ = error;
}

Endpoints::Serving::Serving(Endpoints& endpoints, const Daemon* daemon)
    : endpoints_(endpoints) {
  absl::MutexLock lock(&endpoints_.mu_);
  endpoints_.daemon_ = daemon;
  endpoints_.nvml_error_ = absl::OkStatus();
}

Endpoints::Serving::~Serving() {
  absl::MutexLock lock(&endpoints_.mu_);  // waits out probes and scrapes
  endpoints_.daemon_ = nullptr;
}

absl::Status Endpoints::NotServing() const {
  if (!nvml_error_.ok()) {
    return absl::UnavailableError(
        absl::StrCat("NVML not loaded: ", nvml_error_.message()));
  }
  return absl::UnavailableError(
      "not serving yet: loading NVML and discovering the GPUs");
}

absl::Status Endpoints::Healthz() const {
  absl::MutexLock lock(&mu_);
  if (daemon_ == nullptr) return NotServing();
  return Liveness(daemon_->NvmlFailure(), daemon_->Plugins(),
                  ToProbe(daemon_->Dra()));
}

absl::Status Endpoints::Readyz() const {
  absl::MutexLock lock(&mu_);
  if (daemon_ == nullptr) return NotServing();
  return Readiness(daemon_->Plugins(), ToProbe(daemon_->Dra()));
}

std::vector<std::string> Endpoints::ReadyzNotes() const {
  absl::MutexLock lock(&mu_);
  if (daemon_ == nullptr) return {};
  return daemon_->ReadinessNotes();
}

std::vector<metrics::FamilySnapshot> Endpoints::Collect() const {
  metrics::FamilySnapshot devices = Gauge(
      "gpu_device_plugin_devices",
      "Devices advertised now, by resource and health (healthy, unhealthy).",
      {"resource", "health"});
  metrics::FamilySnapshot registered =
      Gauge("gpu_device_plugin_registered",
            "1 when the resource is registered with the kubelet, else 0.",
            {"resource"});
  metrics::FamilySnapshot streams = Gauge(
      "gpu_device_plugin_list_and_watch_streams",
      "ListAndWatch streams open now (the kubelet holds one), by resource.",
      {"resource"});
  metrics::FamilySnapshot nvml =
      Gauge("gpu_device_plugin_nvml_ok",
            "1 when NVML is loaded and not failing, else 0.", {});
  metrics::FamilySnapshot dra_devices =
      Gauge("gpu_device_plugin_dra_devices",
            "Devices the DRA driver publishes now, by health.", {"health"});
  metrics::FamilySnapshot dra_registered =
      Gauge("gpu_device_plugin_dra_registered",
            "1 when the kubelet has registered the DRA driver, else 0.", {});
  metrics::FamilySnapshot dra_slices = Gauge(
      "gpu_device_plugin_dra_slices_in_sync",
      "1 when this node's ResourceSlices are what the driver publishes.", {});
  metrics::FamilySnapshot dra_claims =
      Gauge("gpu_device_plugin_dra_prepared_claims",
            "Claims prepared on this node now.", {});
  absl::MutexLock lock(&mu_);
  bool nvml_ok = daemon_ != nullptr && daemon_->NvmlFailure().empty();
  nvml.samples.push_back({{}, nvml_ok ? 1.0 : 0.0});
  if (daemon_ != nullptr) {
    for (const PluginStatus& p : daemon_->Plugins()) {
      devices.samples.push_back(
          {{p.resource, "healthy"}, static_cast<double>(p.healthy)});
      devices.samples.push_back(
          {{p.resource, "unhealthy"}, static_cast<double>(p.unhealthy)});
      registered.samples.push_back({{p.resource}, p.registered ? 1.0 : 0.0});
      streams.samples.push_back(
          {{p.resource}, static_cast<double>(p.open_streams)});
    }
  }
  std::vector<metrics::FamilySnapshot> out = {devices, registered, streams,
                                              nvml};
  if (std::optional<dra::DraStatus> d =
          daemon_ != nullptr ? daemon_->Dra() : std::nullopt;
      d.has_value()) {
    dra_devices.samples.push_back(
        {{"healthy"}, static_cast<double>(d->healthy)});
    dra_devices.samples.push_back(
        {{"unhealthy"}, static_cast<double>(d->devices - d->healthy)});
    dra_registered.samples.push_back({{}, d->registered ? 1.0 : 0.0});
    dra_slices.samples.push_back({{}, d->slices.in_sync ? 1.0 : 0.0});
    dra_claims.samples.push_back({{}, static_cast<double>(d->prepared_claims)});
    for (auto* f : {&dra_devices, &dra_registered, &dra_slices, &dra_claims}) {
      out.push_back(std::move(*f));
    }
  }
  if (server_ != nullptr) {
    const metrics::ConnectionLoopCounts c = server_->counts();
    metrics::FamilySnapshot requests{
        "gpu_device_plugin_http_requests_total",
        "HTTP requests whose head came in full (probes and scrapes).",
        metrics::Type::kCounter};
    requests.samples.push_back({{}, static_cast<double>(c.requests)});
    metrics::FamilySnapshot dropped{
        "gpu_device_plugin_http_connections_dropped_total",
        "HTTP connections closed by the plugin, by reason (head_timeout: "
        "no full request within 5 s; write_timeout: the answer not taken "
        "within 5 s; evicted: closed for a newer one at 256).",
        metrics::Type::kCounter,
        {"reason"}};
    dropped.samples = {
        {{"evicted"}, static_cast<double>(c.evicted)},
        {{"head_timeout"}, static_cast<double>(c.head_timeouts)},
        {{"write_timeout"}, static_cast<double>(c.write_timeouts)}};
    out.push_back(std::move(requests));
    out.push_back(std::move(dropped));
  }
  return out;
}

void CountConfigReload(const absl::Status& result) {
  static metrics::Family<metrics::Counter>& reloads =
      metrics::DefaultRegistry().AddCounter(
          "gpu_device_plugin_config_reloads_total",
          "Config reloads (SIGHUP or the config file changed), by result "
          "(ok, failed).",
          {"result"});
  reloads.With({result.ok() ? "ok" : "failed"}).Increment();
}

}  // namespace gdp
