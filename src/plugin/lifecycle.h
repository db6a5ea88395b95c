// Keeps one plugin served and registered with the kubelet: serve the socket,
// register, watch the directory for kubelet restarts, serve and register
// again, retry with backoff. Knows nothing about GPUs.
#ifndef GDP_PLUGIN_LIFECYCLE_H_
#define GDP_PLUGIN_LIFECYCLE_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "plugin/registrar.h"
#include "rpc/dir_watcher.h"
#include "rpc/socket_server.h"
#include "util/file_id.h"

namespace gdp {

struct LifecycleOptions {
  std::string
      kubelet_socket;       // e.g. /var/lib/kubelet/device-plugins/kubelet.sock
  std::string socket_name;  // our file name beside it, e.g. nvidia-gpu.sock
  std::string resource_name;  // e.g. nvidia.com/gpu
  absl::Duration initial_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(30);
  absl::Duration register_timeout = absl::Seconds(15);
};

class PluginLifecycle {
 public:
  // Makes fresh services for each server start; all are served on our
  // socket.
  using ServiceFactory = std::function<ServiceList()>;

  // Result on failure: the directory cannot be created or watched.
  static absl::StatusOr<std::unique_ptr<PluginLifecycle>> Create(
      LifecycleOptions options, ServiceFactory factory);

  // Stops serving and removes our socket.
  ~PluginLifecycle();

  // Calls Step() until Stop(). Call from one thread.
  void Run();

  // One round: start serving if not serving, register if due and the
  // kubelet's socket exists, then block until a directory event, the next
  // retry time, Stop(), or `max_wait`, and react to what happened. Returns at
  // once after Stop(). Call from one thread (the same as Run).
  void Step(absl::Duration max_wait = absl::InfiniteDuration());

  // Thread-safe (e.g. from a signal thread). Makes Run() return promptly,
  // waking the wait and cancelling a Register in flight.
  void Stop();

  // Thread-safe. Makes the loop drop its server and serve and register
  // anew (SIGHUP), as after a kubelet restart.
  void Restart();

  // Thread-safe.
  bool registered() const { return registered_.load(); }
  int registrations() const { return registrations_.load(); }

 private:
  PluginLifecycle(LifecycleOptions options, ServiceFactory factory,
                  std::unique_ptr<DirWatcher> watcher);
  void StartServer();
  void TryRegister();
  void Retry(const char* what);  // schedules the next attempt with backoff
  void ResetBackoff();
  // Marks us unregistered (and drops the server if asked) so the next Step
  // serves and registers at once.
  void ServeAndRegisterAnew(bool drop_server);

  const LifecycleOptions options_;
  const std::string socket_path_;
  ServiceFactory factory_;
  std::unique_ptr<DirWatcher> watcher_;
  Registrar registrar_;
  std::unique_ptr<SocketServer> server_;
  // kubelet.sock as it was when we last registered: a creation event for
  // that same file (queued before we registered) is not a kubelet restart.
  std::optional<FileId> registered_kubelet_;
  absl::Time next_attempt_ = absl::InfinitePast();
  absl::Duration backoff_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> restart_requested_{false};
  std::atomic<bool> registered_{false};
  std::atomic<int> registrations_{0};
};

}  // namespace gdp

#endif  // GDP_PLUGIN_LIFECYCLE_H_
