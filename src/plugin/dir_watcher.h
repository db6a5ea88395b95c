// Watches the device-plugins directory for the kubelet's restarts: a new
// kubelet.sock, or our own socket deleted (the kubelet wipes the directory's
// sockets when it starts).
#ifndef GDP_PLUGIN_DIR_WATCHER_H_
#define GDP_PLUGIN_DIR_WATCHER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gdp {

struct DirEvents {
  bool kubelet_socket_created = false;
  bool own_socket_removed = false;
};

// Wait() is for one thread; Wake() may be called from any thread.
class DirWatcher {
 public:
  // Watches `dir` (created if missing, like the kubelet would) for the files
  // named `kubelet_socket` and `own_socket` (file names, not paths).
  // Result on failure: the inotify or mkdir error, naming the directory.
  static absl::StatusOr<std::unique_ptr<DirWatcher>> Create(
      const std::string& dir, const std::string& kubelet_socket,
      const std::string& own_socket);
  ~DirWatcher();
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;

  // Blocks until a watched event, Wake(), or `timeout` (absl::InfiniteDuration
  // for none), then returns the watched events that happened (none after a
  // Wake or timeout). Consumes them.
  DirEvents Wait(absl::Duration timeout);

  // Makes the current or next Wait() return at once.
  void Wake();

 private:
  DirWatcher(std::string dir, std::string kubelet_socket,
             std::string own_socket, int inotify_fd, int event_fd);
  void Rewatch();  // after the directory itself was removed
  void Drain(DirEvents* events);

  std::string dir_, kubelet_socket_, own_socket_;
  int inotify_fd_;
  int event_fd_;
  int watch_ = -1;
};

}  // namespace gdp

#endif  // GDP_PLUGIN_DIR_WATCHER_H_
