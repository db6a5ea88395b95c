// Keeps the DRA plugin's two sockets served for the kubelet: the service
// endpoint <plugins dir>/<driver>/dra.sock and the registration socket
// <registration dir>/<driver>-reg.sock, which the kubelet's plugin watcher
// finds (at its start, or when the socket appears) and calls GetInfo on.
// When either socket or its directory goes, both are served anew, so the
// kubelet registers the plugin again. While health streams are open it
// resends them every `health_refresh`, so the kubelet never takes a quiet
// device for one of unknown health. Knows no GPUs.
#ifndef GDP_DRA_KUBELET_PLUGIN_H_
#define GDP_DRA_KUBELET_PLUGIN_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/dra_service.h"
#include "rpc/dir_watcher.h"
#include "rpc/socket_server.h"

namespace gdp::dra {

struct KubeletPluginOptions {
  std::string driver_name;
  std::string registration_dir;  // the kubelet's plugins_registry
  std::string plugins_dir;       // the kubelet's plugins directory
  // Retry of a socket that cannot be served: doubling from initial to max.
  absl::Duration initial_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(30);
  // Below the kubelet's 30 s after which silence means "unknown".
  absl::Duration health_refresh = absl::Seconds(20);
};

// <registration_dir>/<driver>-reg.sock and <plugins_dir>/<driver>/dra.sock.
std::string RegistrationSocket(const KubeletPluginOptions& o);
std::string EndpointSocket(const KubeletPluginOptions& o);

class KubeletPlugin {
 public:
  // Fresh services for each start of the endpoint's server.
  using ServiceFactory = std::function<ServiceList()>;

  // `streams` (open health streams) and `state` must outlive the plugin.
  // Result on failure: a directory cannot be created or watched.
  static absl::StatusOr<std::unique_ptr<KubeletPlugin>> Create(
      KubeletPluginOptions options, ServiceFactory endpoint_services,
      HealthStreams& streams, RegistrationState& state);

  // Stops serving and removes both sockets.
  ~KubeletPlugin();

  // Calls Step() until Stop(). Call from one thread.
  void Run();

  // One round: serve the sockets if not served (endpoint first), then wait
  // until a socket or directory goes, the next retry or health refresh,
  // Stop(), or `max_wait`. Call from one thread (the same as Run).
  void Step(absl::Duration max_wait = absl::InfiniteDuration());

  // Thread-safe: makes Run() return promptly.
  void Stop();

  // Thread-safe: both sockets are served and their files are there.
  bool serving() const;

 private:
  KubeletPlugin(KubeletPluginOptions options, ServiceFactory factory,
                HealthStreams& streams, RegistrationState& state,
                std::unique_ptr<DirWatcher> watcher);
  void Serve();
  void Drop();

  const KubeletPluginOptions options_;
  const std::string registration_socket_;
  const std::string endpoint_socket_;
  ServiceFactory factory_;
  HealthStreams& streams_;
  RegistrationState& state_;
  std::unique_ptr<DirWatcher> watcher_;
  std::unique_ptr<SocketServer> endpoint_;
  std::unique_ptr<SocketServer> registration_;
  absl::Time next_attempt_ = absl::InfinitePast();
  absl::Duration backoff_;
  absl::Time next_refresh_ = absl::InfiniteFuture();
  std::atomic<bool> stopping_{false};
  std::atomic<bool> serving_{false};
};

}  // namespace gdp::dra

#endif  // GDP_DRA_KUBELET_PLUGIN_H_
