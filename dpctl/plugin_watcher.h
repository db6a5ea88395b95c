// Follows the unix sockets in a plugin registry directory, as the kubelet's
// plugin watcher does: the sockets present at start count as created, then
// inotify reports each socket created or removed (no polling). Names
// starting with '.' and files that are not sockets are ignored;
// subdirectories are followed too.
#ifndef GDP_DPCTL_PLUGIN_WATCHER_H_
#define GDP_DPCTL_PLUGIN_WATCHER_H_

#include <map>
#include <set>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "command_input.h"

namespace gdp::dpctl {

class PluginWatcher {
 public:
  // Receives the watcher's reports, all from the watcher's one thread, in
  // the order things happened. Each socket is reported created once, then
  // removed once, before it can be reported created again.
  class Handler {
   public:
    virtual ~Handler() = default;
    virtual void SocketCreated(const std::string& path) = 0;
    virtual void SocketRemoved(const std::string& path) = 0;
  };

  // `handler` is not owned and must outlive the watcher.
  PluginWatcher(std::string dir, Handler* handler);
  // Calls Stop.
  ~PluginWatcher();

  PluginWatcher(const PluginWatcher&) = delete;
  PluginWatcher& operator=(const PluginWatcher&) = delete;

  // Creates the directory when missing and starts watching it (and its
  // subdirectories). Reports nothing yet. Errors name the path that failed.
  // Call once, before Start.
  absl::Status Init();

  // Starts the watcher thread: it reports the sockets already there, then
  // follows changes until Stop. Call once, after Init succeeded.
  void Start();

  // Stops the thread and joins it; no report follows. Idempotent; not to be
  // called from the handler.
  void Stop();

  const std::string& dir() const { return dir_; }

 private:
  // Body of the thread.
  void Run();
  // Handles the inotify events readable now; false when reading failed.
  bool ReadEvents();
  // Watches `dir` and, recursively, its subdirectories (but not '.'-names),
  // adding the sockets found to `sockets`.
  void Walk(const std::string& dir, std::set<std::string>* sockets);
  // Walks the whole tree and reconciles every socket known with it.
  void Rescan();
  // Makes the known sockets under `prefix` (a directory, "" for all) equal
  // to `found`, reporting each difference.
  void Reconcile(const std::string& prefix, const std::set<std::string>& found);
  void AddWatch(const std::string& dir);

  const std::string dir_;
  Handler* const handler_;
  int inotify_fd_ = -1;
  Latch stop_;
  std::thread thread_;
  // Touched by Init before the thread starts, then only by the thread.
  std::map<int, std::string> watches_;  // watch descriptor -> directory
  std::set<std::string> known_;         // sockets reported created
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_PLUGIN_WATCHER_H_
