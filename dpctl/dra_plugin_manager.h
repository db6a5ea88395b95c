// The kubelet's DRA plugin manager: registers the DRA plugins whose
// registration sockets a PluginWatcher reports (dial, GetInfo with retries,
// validation, NotifyRegistrationStatus), keeps every registration per
// driver (the newest one is used), follows the health stream of plugins
// that serve it, and deregisters a plugin when its socket goes away.
#ifndef GDP_DPCTL_DRA_PLUGIN_MANAGER_H_
#define GDP_DPCTL_DRA_PLUGIN_MANAGER_H_

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dra_client.h"
#include "dra_events.h"
#include "dra_registration.h"
#include "events.h"
#include "plugin_watcher.h"

namespace gdp::dpctl {

struct DraManagerOptions {
  KubeletApis apis;
  // How long to wait for the registration socket to accept a connection.
  absl::Duration dial_timeout = absl::Seconds(10);
  // Deadline of GetInfo (the kubelet's is 1 s).
  absl::Duration get_info_timeout = absl::Seconds(1);
  // Deadline of NotifyRegistrationStatus.
  absl::Duration notify_timeout = absl::Seconds(5);
  // Dial + GetInfo is tried this many times, waiting `initial_backoff`
  // after the first failure and twice as long after each further one.
  int get_info_attempts = 5;
  absl::Duration initial_backoff = absl::Milliseconds(500);
  // Pause before a health stream that ended is opened again.
  absl::Duration health_retry = absl::Seconds(5);
};

class DraPluginManager : public PluginWatcher::Handler {
 public:
  // A registered plugin to call.
  struct Target {
    std::string driver;
    DraApi api = DraApi::kV1;
    // Cancelled when the plugin is deregistered or at Shutdown.
    std::shared_ptr<DraClient> client;
  };

  // `events` is not owned and must outlive the manager.
  DraPluginManager(DraManagerOptions options, EventSink* events);
  // Calls Shutdown.
  ~DraPluginManager() override;

  DraPluginManager(const DraPluginManager&) = delete;
  DraPluginManager& operator=(const DraPluginManager&) = delete;

  // Emits plugin_found and registers the plugin on a thread of its own:
  // emits plugin_error for each failed dial or GetInfo (retried as the
  // options say), then registered (ok or refused; the plugin is notified
  // either way) and, for a plugin serving the health stream, health and
  // health_stream_ended events until it is deregistered. A registration
  // still in progress for the same path is abandoned. Ignored after
  // Shutdown.
  void SocketCreated(const std::string& path) override;
  // Abandons a registration in progress for `path`, or deregisters the
  // plugin registered through it: its calls are cancelled, its health
  // stream is closed, and a deregistered event is emitted.
  void SocketRemoved(const std::string& path) override;

  // The newest registration of `driver`; "-" names the only driver
  // registered. NotFound, FailedPrecondition (no driver) or InvalidArgument
  // ("-" with several drivers), with a message that says so.
  absl::StatusOr<Target> Get(absl::string_view driver);
  // Every registration, oldest first.
  std::vector<DriverReport> List();
  // Blocks until some driver is registered and returns the name of the
  // oldest registration's driver; nullopt once Shutdown was called.
  std::optional<std::string> AwaitAnyDriver();

  // Abandons registrations in progress, cancels every call and health
  // stream and joins every thread. No event follows. Idempotent;
  // thread-safe, but not to be called from an EventSink.
  void Shutdown();

 private:
  struct Registration {
    std::string socket;
    std::string driver;
    std::string endpoint;
    DraApi api = DraApi::kV1;
    bool health = false;
    std::shared_ptr<DraClient> client;  // to the endpoint
    bool stopped = false;               // guarded by mu_
    std::thread health_thread;          // joined by whoever removes it
  };
  // A registration in progress for one socket.
  struct Attempt {
    std::string socket;
    std::shared_ptr<DraClient> client;  // to the registration socket
    bool cancelled = false;             // guarded by mu_
    bool done = false;                  // guarded by mu_
    std::thread thread;
  };

  // Body of an attempt's thread.
  void Register(Attempt* attempt);
  // Dial + GetInfo with retries; nullopt after the last failure or when
  // cancelled.
  std::optional<pluginregistration::PluginInfo> GetInfo(Attempt* attempt);
  // Waits `d` unless the attempt is cancelled first; false when it was.
  bool Backoff(Attempt* attempt, absl::Duration d);
  // Body of a registration's health thread.
  void FollowHealth(std::shared_ptr<Registration> registration);
  // Under mu_: joins and drops the attempts that are done.
  void ReapAttempts() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Under mu_: abandons the attempts in progress for `path`.
  void CancelAttempts(const std::string& path)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DraManagerOptions options_;
  EventSink* const events_;

  // Held for the whole of Shutdown, so a second call waits for the first.
  absl::Mutex shutdown_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // In the order they were registered.
  std::list<std::shared_ptr<Registration>> registrations_ ABSL_GUARDED_BY(mu_);
  std::list<Attempt> attempts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DRA_PLUGIN_MANAGER_H_
