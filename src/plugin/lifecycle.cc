#include "plugin/lifecycle.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "plugin/plugin_metrics.h"
#include "util/logging.h"

namespace gdp {

absl::StatusOr<std::unique_ptr<PluginLifecycle>> PluginLifecycle::Create(
    LifecycleOptions options, ServiceFactory factory) {
  std::filesystem::path kubelet(options.kubelet_socket);
  auto watcher =
      DirWatcher::Create(kubelet.parent_path().string(),
                         kubelet.filename().string(), options.socket_name);
  if (!watcher.ok()) return watcher.status();
  return std::unique_ptr<PluginLifecycle>(new PluginLifecycle(
      std::move(options), std::move(factory), *std::move(watcher)));
}

PluginLifecycle::PluginLifecycle(LifecycleOptions options,
                                 ServiceFactory factory,
                                 std::unique_ptr<DirWatcher> watcher)
    : options_(std::move(options)),
      socket_path_(
          (std::filesystem::path(options_.kubelet_socket).parent_path() /
           options_.socket_name)
              .string()),
      factory_(std::move(factory)),
      watcher_(std::move(watcher)),
      backoff_(options_.initial_backoff) {}

PluginLifecycle::~PluginLifecycle() { server_.reset(); }

void PluginLifecycle::Run() {
  while (!stopping_.load()) Step();
  server_.reset();
  registered_ = false;
  LOG_INFO("Stopped serving {} on {}", options_.resource_name, socket_path_);
}

void PluginLifecycle::Stop() {
  stopping_ = true;
  registrar_.Cancel();
  watcher_->Wake();
}

void PluginLifecycle::Restart() {
  restart_requested_ = true;
  watcher_->Wake();
}

void PluginLifecycle::ServeAndRegisterAnew(bool drop_server) {
  if (drop_server) server_.reset();
  registered_ = false;
  ResetBackoff();
}

void PluginLifecycle::ResetBackoff() {
  backoff_ = options_.initial_backoff;
  next_attempt_ = absl::InfinitePast();
}

void PluginLifecycle::Retry(const char* what) {
  next_attempt_ = absl::Now() + backoff_;
  LOG_INFO("Will retry {} in {}", what, absl::FormatDuration(backoff_));
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
}

void PluginLifecycle::StartServer() {
  auto server = SocketServer::Start(socket_path_, factory_());
  if (!server.ok()) {
    LOG_ERROR("Cannot serve {}: {}", options_.resource_name,
              server.status().message());
    Retry("serving");
    return;
  }
  server_ = *std::move(server);
  LOG_INFO("Serving {} on {}", options_.resource_name, socket_path_);
}

void PluginLifecycle::TryRegister() {
  std::optional<FileId> kubelet = GetFileId(options_.kubelet_socket);
  absl::Status s = registrar_.Register(
      {options_.kubelet_socket, options_.socket_name, options_.resource_name},
      options_.register_timeout);
  if (stopping_.load()) return;
  if (!s.ok()) {
    LOG_ERROR("Registering {} with the kubelet at {} failed: {}",
              options_.resource_name, options_.kubelet_socket, s.ToString());
    PluginMetrics::Get()
        .registrations.With({options_.resource_name, "failed"})
        .Increment();
    Retry("registration");
    return;
  }
  registered_ = true;
  // Whichever event showed it first (our socket wiped, or kubelet.sock
  // created), a kubelet restart is a registration with a new kubelet.sock.
  if (registered_kubelet_.has_value() && kubelet != registered_kubelet_) {
    PluginMetrics::Get()
        .kubelet_restarts.With({options_.resource_name})
        .Increment();
  }
  registered_kubelet_ = kubelet;
  registrations_++;
  PluginMetrics::Get()
      .registrations.With({options_.resource_name, "ok"})
      .Increment();
  ResetBackoff();
  LOG_INFO("Registered device plugin for {} with the kubelet",
           options_.resource_name);
}

void PluginLifecycle::Step(absl::Duration max_wait) {
  if (stopping_.load()) return;
  if (server_ == nullptr && absl::Now() >= next_attempt_) StartServer();
  bool kubelet_there = GetFileId(options_.kubelet_socket).has_value();
  if (server_ != nullptr && !registered_ && kubelet_there &&
      absl::Now() >= next_attempt_) {
    TryRegister();
  }
  if (stopping_.load()) return;

  // Sleep until something happens; wake for a retry only if one is pending.
  absl::Duration timeout = absl::InfiniteDuration();
  if (server_ == nullptr || (!registered_ && kubelet_there)) {
    timeout = next_attempt_ - absl::Now();
  }
  DirEvents ev = watcher_->Wait(std::min(timeout, max_wait));

  if (restart_requested_.exchange(false)) ServeAndRegisterAnew(true);
  if (ev.own_socket_removed && server_ != nullptr && !server_->SocketIntact()) {
    if (SomethingListens(socket_path_)) {
      // Another process took the path: do not fight over it (StartServer
      // waits with backoff until it is free).
      LOG_ERROR("{} was taken over by another process; waiting for it",
                socket_path_);
      server_.reset();
      registered_ = false;
      Retry("serving");
    } else {
      LOG_WARN("{} was removed (kubelet restart?); serving again",
               socket_path_);
      ServeAndRegisterAnew(true);
    }
  }
  if (ev.kubelet_socket_created && registered_ &&
      GetFileId(options_.kubelet_socket) == registered_kubelet_) {
    VLOG(1, "{} creation already seen; registered with that kubelet",
         options_.kubelet_socket);
  } else if (ev.kubelet_socket_created) {
    LOG_INFO("{} was created (kubelet started); registering again",
             options_.kubelet_socket);
    ServeAndRegisterAnew(server_ != nullptr && !server_->SocketIntact());
  }
}

}  // namespace gdp
