// The kubelet's Registration service on <dir>/kubelet.sock: validates
// registrations, dials each plugin back, and follows its ListAndWatch stream
// into a DeviceManager.
#ifndef GDP_DPCTL_REGISTRATION_SERVER_H_
#define GDP_DPCTL_REGISTRATION_SERVER_H_

#include <list>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "device_manager.h"
#include "events.h"
#include "grpcpp/grpcpp.h"
#include "plugin_client.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp::dpctl {

// The API version the kubelet accepts.
inline constexpr char kVersion[] = "v1beta1";
// The file name of the kubelet's socket in the device-plugins directory.
inline constexpr char kKubeletSocket[] = "kubelet.sock";

// Removes every unix socket in `dir` (also through symlinks), leaving
// regular files and directories alone, as the kubelet does at start.
// Returns the first error met, after trying every entry.
absl::Status RemoveSockets(const std::string& dir);

class RegistrationServer {
 public:
  struct Options {
    // The device-plugins directory; created when missing.
    std::string dir;
    // How long Register waits for the dial back to the plugin.
    absl::Duration dial_timeout = absl::Seconds(10);
    // Deadline of each unary call to a plugin.
    absl::Duration rpc_timeout = absl::Seconds(10);
  };

  // `manager` and `events` are not owned and must outlive the server.
  RegistrationServer(Options options, DeviceManager* manager,
                     EventSink* events);
  // Calls Shutdown.
  ~RegistrationServer();

  RegistrationServer(const RegistrationServer&) = delete;
  RegistrationServer& operator=(const RegistrationServer&) = delete;

  // Creates the directory, removes its sockets, listens on kubelet.sock and
  // emits a listening event. Errors name the path that failed. Call once.
  absl::Status Start();

  // Stops serving (waiting for Register calls in progress, which give up
  // their dial), cancels every ListAndWatch stream, joins the follower
  // threads and removes kubelet.sock. Idempotent; thread-safe.
  void Shutdown();

  // <dir>/kubelet.sock.
  std::string socket_path() const;

 private:
  class Service;
  struct Follower {
    std::shared_ptr<PluginClient> client;
    std::thread thread;
    bool done = false;  // guarded by mu_
  };

  // The Register RPC: returns OK once the plugin is dialed, its options are
  // known and its stream is followed.
  absl::Status Register(const v1beta1::RegisterRequest& request);
  // Body of a follower thread.
  void Follow(Follower* follower, std::shared_ptr<PluginClient> client,
              std::string resource, uint64_t generation);
  // Emits a refused register event and returns `status`.
  absl::Status Refuse(const v1beta1::RegisterRequest& request,
                      absl::Status status);

  const Options options_;
  DeviceManager* const manager_;
  EventSink* const events_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;

  // Held for the whole of Shutdown, so a second call waits for the first.
  absl::Mutex shutdown_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Plugins dialed by Register calls still in progress.
  std::set<std::shared_ptr<PluginClient>> dialed_ ABSL_GUARDED_BY(mu_);
  // One per accepted registration; finished ones are joined and dropped at
  // the next registration, the rest at Shutdown.
  std::list<Follower> followers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_REGISTRATION_SERVER_H_
