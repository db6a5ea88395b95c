#include "plugin_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gdp::dpctl {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                             IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF;

bool Hidden(absl::string_view name) { return absl::StartsWith(name, "."); }

// True when `path` is a unix socket, following symlinks as the kubelet's
// os.Stat does.
bool IsSocket(const std::string& path) {
  std::error_code error;
  return fs::is_socket(path, error);
}

// True when `path` is a directory itself (symlinks are not followed, so a
// link cannot make the walk loop).
bool IsDirectory(const std::string& path) {
  std::error_code error;
  return fs::is_directory(fs::symlink_status(path, error));
}

// Reported paths are "<dir>/<name>": a trailing '/' would double it.
std::string WithoutTrailingSlash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

bool Under(const std::string& path, const std::string& prefix) {
  return prefix.empty() || absl::StartsWith(path, prefix + "/");
}

}  // namespace

PluginWatcher::PluginWatcher(std::string dir, Handler* handler)
    : dir_(WithoutTrailingSlash(std::move(dir))), handler_(handler) {}

PluginWatcher::~PluginWatcher() {
  Stop();
  if (inotify_fd_ >= 0) close(inotify_fd_);
}

absl::Status PluginWatcher::Init() {
  if (!stop_.ok()) return absl::InternalError("cannot create a pipe");
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir_, ": ", error.message()));
  }
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) {
    return absl::InternalError(
        absl::StrCat("inotify_init1: ", std::strerror(errno)));
  }
  // Watch before walking: a socket created in between is then reported by
  // both, and Reconcile reports it once.
  const int wd = inotify_add_watch(inotify_fd_, dir_.c_str(), kEvents);
  if (wd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot watch ", dir_, ": ", std::strerror(errno)));
  }
  watches_[wd] = dir_;
  return absl::OkStatus();
}

void PluginWatcher::Start() {
  thread_ = std::thread(&PluginWatcher::Run, this);
}

void PluginWatcher::Stop() {
  stop_.Signal();
  if (thread_.joinable()) thread_.join();
}

void PluginWatcher::AddWatch(const std::string& dir) {
  const int wd = inotify_add_watch(inotify_fd_, dir.c_str(), kEvents);
  if (wd >= 0) watches_[wd] = dir;
}

void PluginWatcher::Walk(const std::string& dir,
                         std::set<std::string>* sockets) {
  std::error_code error;
  fs::directory_iterator it(dir, error);
  if (error) return;
  for (const fs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (Hidden(name)) continue;
    const std::string path = entry.path().string();
    if (IsDirectory(path)) {
      AddWatch(path);
      Walk(path, sockets);
    } else if (IsSocket(path)) {
      sockets->insert(path);
    }
  }
}

void PluginWatcher::Reconcile(const std::string& prefix,
                              const std::set<std::string>& found) {
  std::vector<std::string> gone;
  for (const std::string& path : known_) {
    if (Under(path, prefix) && !found.count(path)) gone.push_back(path);
  }
  for (const std::string& path : gone) {
    known_.erase(path);
    handler_->SocketRemoved(path);
  }
  for (const std::string& path : found) {
    if (known_.insert(path).second) handler_->SocketCreated(path);
  }
}

void PluginWatcher::Rescan() {
  std::set<std::string> found;
  Walk(dir_, &found);
  Reconcile("", found);
}

void PluginWatcher::Run() {
  Rescan();
  while (WaitReadable({stop_.fd(), inotify_fd_}) == 1) {
    if (!ReadEvents()) return;
  }
}

bool PluginWatcher::ReadEvents() {
  alignas(inotify_event) char buffer[16 * 1024];
  for (;;) {
    const ssize_t n = read(inotify_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN;
    if (n == 0) return false;
    for (ssize_t offset = 0; offset < n;) {
      const auto* event =
          reinterpret_cast<const inotify_event*>(buffer + offset);
      offset += sizeof(inotify_event) + event->len;
      if (stop_.signaled()) return true;
      if (event->mask & IN_Q_OVERFLOW) {
        // Events were lost: compare the whole tree with what is known.
        Rescan();
        continue;
      }
      auto watch = watches_.find(event->wd);
      if (watch == watches_.end()) continue;
      if (event->mask & IN_IGNORED) {
        watches_.erase(watch);
        continue;
      }
      if (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        // The directory itself went away: so did its sockets.
        Reconcile(watch->second, {});
        continue;
      }
      if (event->len == 0 || Hidden(event->name)) continue;
      const std::string path = absl::StrCat(watch->second, "/", event->name);
      if (event->mask & (IN_CREATE | IN_MOVED_TO)) {
        if (event->mask & IN_ISDIR) {
          // No socket under it is known: its removal reconciled them.
          std::set<std::string> found;
          AddWatch(path);
          Walk(path, &found);
          Reconcile(path, found);
        } else if (IsSocket(path) && known_.insert(path).second) {
          handler_->SocketCreated(path);
        }
      } else if (event->mask & (IN_DELETE | IN_MOVED_FROM)) {
        if (event->mask & IN_ISDIR) {
          Reconcile(path, {});
        } else if (known_.erase(path) != 0) {
          handler_->SocketRemoved(path);
        }
      }
    }
  }
}

}  // namespace gdp::dpctl
