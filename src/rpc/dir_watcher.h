// Watches kubelet directories for the events a plugin reacts to: the
// kubelet's socket created (the device-plugins directory's kubelet.sock: a
// kubelet restart), or one of our own sockets deleted (the kubelet wipes
// the device-plugins directory's sockets when it starts; anyone may delete
// the DRA plugin's). A watched directory that is removed is created again
// and watched anew, and that counts as our socket deleted; so does a
// directory replaced at the same path (seen through its parent, since a
// removed directory that something still holds open sends no event of its
// own). Knows no GPUs.
#ifndef GDP_RPC_DIR_WATCHER_H_
#define GDP_RPC_DIR_WATCHER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gdp {

struct DirEvents {
  bool kubelet_socket_created = false;
  bool own_socket_removed = false;
};

// One directory to watch and the file names (not paths) that matter in it;
// an empty name is never reported.
struct WatchedDir {
  std::string dir;
  std::string kubelet_socket;
  std::string own_socket;
};

// Wait() is for one thread; Wake() may be called from any thread.
class DirWatcher {
 public:
  // Watches `dir` (created 0755 if missing, whatever the umask, like the
  // kubelet would) for the files named `kubelet_socket` and `own_socket`.
  // Result on failure: the inotify or mkdir error, naming the directory.
  static absl::StatusOr<std::unique_ptr<DirWatcher>> Create(
      const std::string& dir, const std::string& kubelet_socket,
      const std::string& own_socket);
  // The same for several directories at once (events of all are merged).
  static absl::StatusOr<std::unique_ptr<DirWatcher>> Create(
      std::vector<WatchedDir> dirs);
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
  struct Watch {
    WatchedDir names;
    int wd = -1;
    int parent_wd = -1;  // the parent, for the directory's own name
    std::string base;    // the directory's name in its parent
    ino_t ino = 0;       // of the directory watched
    dev_t dev = 0;
  };
  DirWatcher(std::vector<WatchedDir> dirs, int inotify_fd, int event_fd);
  // Watches w's directory (and its parent) as it is at its path now.
  // Result on failure: the inotify error, naming the directory.
  absl::Status WatchNow(Watch& w);
  void Rewatch(Watch& w);  // after the directory itself was removed
  // Whether the path no longer names the directory watched.
  bool Replaced(const Watch& w) const;
  void Drain(DirEvents* events);

  std::vector<Watch> watches_;
  int inotify_fd_;
  int event_fd_;
};

}  // namespace gdp

#endif  // GDP_RPC_DIR_WATCHER_H_
