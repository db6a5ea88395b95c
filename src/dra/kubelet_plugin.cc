#include "dra/kubelet_plugin.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/logging.h"

namespace gdp::dra {

std::string RegistrationSocket(const KubeletPluginOptions& o) {
  return (std::filesystem::path(o.registration_dir) /
          absl::StrCat(o.driver_name, "-reg.sock"))
      .string();
}

std::string EndpointSocket(const KubeletPluginOptions& o) {
  return (std::filesystem::path(o.plugins_dir) / o.driver_name / "dra.sock")
      .string();
}

absl::StatusOr<std::unique_ptr<KubeletPlugin>> KubeletPlugin::Create(
    KubeletPluginOptions options, ServiceFactory endpoint_services,
    HealthStreams& streams, RegistrationState& state) {
  const std::filesystem::path reg(RegistrationSocket(options));
  const std::filesystem::path endpoint(EndpointSocket(options));
  auto watcher = DirWatcher::Create(
      {WatchedDir{reg.parent_path().string(), "", reg.filename().string()},
       WatchedDir{endpoint.parent_path().string(), "",
                  endpoint.filename().string()}});
  if (!watcher.ok()) return watcher.status();
  auto plugin = std::unique_ptr<KubeletPlugin>(
      new KubeletPlugin(std::move(options), std::move(endpoint_services),
                        streams, state, *std::move(watcher)));
  DirWatcher* w = plugin->watcher_.get();
  streams.SetOnOpen([w] { w->Wake(); });
  return plugin;
}

KubeletPlugin::KubeletPlugin(KubeletPluginOptions options,
                             ServiceFactory factory, HealthStreams& streams,
                             RegistrationState& state,
                             std::unique_ptr<DirWatcher> watcher)
    : options_(std::move(options)),
      registration_socket_(RegistrationSocket(options_)),
      endpoint_socket_(EndpointSocket(options_)),
      factory_(std::move(factory)),
      streams_(streams),
      state_(state),
      watcher_(std::move(watcher)),
      backoff_(options_.initial_backoff) {}

KubeletPlugin::~KubeletPlugin() {
  streams_.SetOnOpen(nullptr);
  Drop();
}

void KubeletPlugin::Run() {
  while (!stopping_.load()) Step();
  Drop();
  LOG_INFO("Stopped serving DRA driver {}", options_.driver_name);
}

void KubeletPlugin::Stop() {
  stopping_ = true;
  watcher_->Wake();
}

void KubeletPlugin::Drop() {
  serving_ = false;  // first: probes see it while the servers go
  // The registration socket first: the kubelet must not find a plugin
  // whose endpoint is going.
  registration_.reset();
  endpoint_.reset();
  state_.Reset();
}

bool KubeletPlugin::serving() const {
  // Between a socket's removal and the watcher's event, too.
  return serving_.load() && std::filesystem::exists(endpoint_socket_) &&
         std::filesystem::exists(registration_socket_);
}

void KubeletPlugin::Serve() {
  auto endpoint = SocketServer::Start(endpoint_socket_, factory_());
  if (!endpoint.ok()) {
    LOG_ERROR("Cannot serve the DRA endpoint: {}", endpoint.status().message());
  } else {
    RegistrationInfo info{
        options_.driver_name,
        endpoint_socket_,
        {kDraPluginV1, kDraPluginV1beta1, kDraHealthV1alpha1}};
    auto registration = SocketServer::Start(registration_socket_,
                                            RegistrationServices(info, state_));
    if (!registration.ok()) {
      LOG_ERROR("Cannot serve the DRA registration socket: {}",
                registration.status().message());
    } else {
      endpoint_ = *std::move(endpoint);
      registration_ = *std::move(registration);
      serving_ = true;
      backoff_ = options_.initial_backoff;
      LOG_INFO(
          "Serving DRA driver {} on {}; registration socket {} (the kubelet "
          "registers it when it finds the socket)",
          options_.driver_name, endpoint_socket_, registration_socket_);
      return;
    }
  }
  next_attempt_ = absl::Now() + backoff_;
  LOG_INFO("Will retry serving in {}", absl::FormatDuration(backoff_));
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
}

void KubeletPlugin::Step(absl::Duration max_wait) {
  if (stopping_.load()) return;
  const absl::Time now = absl::Now();
  if (!serving_.load() && now >= next_attempt_) Serve();
  if (stopping_.load()) return;
  if (streams_.open() == 0) {
    next_refresh_ = absl::InfiniteFuture();
  } else if (next_refresh_ == absl::InfiniteFuture()) {
    next_refresh_ = now + options_.health_refresh;
  }
  absl::Time wake = next_refresh_;
  if (!serving_.load()) wake = std::min(wake, next_attempt_);
  absl::Duration timeout =
      wake == absl::InfiniteFuture()
          ? absl::InfiniteDuration()
          : std::max(wake - absl::Now(), absl::ZeroDuration());
  DirEvents ev = watcher_->Wait(std::min(timeout, max_wait));
  if (stopping_.load()) return;
  if (absl::Now() >= next_refresh_) {
    const size_t open = streams_.RefreshAll();
    VLOG(2, "Health heartbeat to {} stream(s)", open);
    next_refresh_ = open > 0 ? absl::Now() + options_.health_refresh
                             : absl::InfiniteFuture();
  }
  if (ev.own_socket_removed && serving_.load() &&
      !(endpoint_->SocketIntact() && registration_->SocketIntact())) {
    LOG_WARN(
        "{} was removed; serving both DRA sockets again",
        endpoint_->SocketIntact() ? registration_socket_ : endpoint_socket_);
    Drop();
    next_attempt_ = absl::InfinitePast();
  }
}

}  // namespace gdp::dra
