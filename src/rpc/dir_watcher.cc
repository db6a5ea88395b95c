#include "rpc/dir_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/logging.h"
#include "util/make_dirs.h"

namespace gdp {
namespace {

constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM |
                           IN_DELETE_SELF | IN_MOVE_SELF;
// On the parent: the directory's name appearing or going.
constexpr uint32_t kParentMask =
    IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ONLYDIR;

}  // namespace

absl::StatusOr<std::unique_ptr<DirWatcher>> DirWatcher::Create(
    const std::string& dir, const std::string& kubelet_socket,
    const std::string& own_socket) {
  return Create({WatchedDir{dir, kubelet_socket, own_socket}});
}

absl::StatusOr<std::unique_ptr<DirWatcher>> DirWatcher::Create(
    std::vector<WatchedDir> dirs) {
  for (const WatchedDir& d : dirs) {
    // 0755 whatever the umask: a writable registration or plugin directory
    // would let any local user register a plugin with the kubelet.
    if (absl::Status s = MakeDirs(d.dir, kPublicDirMode); !s.ok()) {
      return absl::UnavailableError(s.message());
    }
  }
  int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (in < 0) {
    return absl::InternalError(
        absl::StrCat("inotify_init1: ", std::strerror(errno)));
  }
  int ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (ev < 0) {
    close(in);
    return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  auto w = std::unique_ptr<DirWatcher>(new DirWatcher(std::move(dirs), in, ev));
  for (Watch& watch : w->watches_) {
    if (absl::Status s = w->WatchNow(watch); !s.ok()) return s;
  }
  return w;
}

absl::Status DirWatcher::WatchNow(Watch& w) {
  const std::filesystem::path dir =
      std::filesystem::path(w.names.dir).lexically_normal();
  std::filesystem::path parent = dir.parent_path();
  w.base = dir.filename().string();
  if (w.base.empty()) {  // "dir/"
    w.base = parent.filename().string();
    parent = parent.parent_path();
  }
  if (parent.empty()) parent = ".";
  w.wd = inotify_add_watch(inotify_fd_, w.names.dir.c_str(), kMask);
  if (w.wd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot watch ", w.names.dir, ": ", std::strerror(errno)));
  }
  struct stat st {};
  if (stat(w.names.dir.c_str(), &st) == 0) {
    w.ino = st.st_ino;
    w.dev = st.st_dev;
  }
  // Best effort: without it, only a removal the directory reports itself
  // is seen.
  w.parent_wd = inotify_add_watch(inotify_fd_, parent.c_str(), kParentMask);
  if (w.parent_wd < 0) {
    LOG_WARN("cannot watch {} for {} being replaced: {}", parent.string(),
             w.names.dir, std::strerror(errno));
  }
  return absl::OkStatus();
}

bool DirWatcher::Replaced(const Watch& w) const {
  struct stat st {};
  if (stat(w.names.dir.c_str(), &st) != 0) return true;
  return st.st_ino != w.ino || st.st_dev != w.dev;
}

DirWatcher::DirWatcher(std::vector<WatchedDir> dirs, int inotify_fd,
                       int event_fd)
    : inotify_fd_(inotify_fd), event_fd_(event_fd) {
  for (WatchedDir& d : dirs) {
    Watch w;
    w.names = std::move(d);
    watches_.push_back(std::move(w));
  }
}

DirWatcher::~DirWatcher() {
  close(inotify_fd_);
  close(event_fd_);
}

void DirWatcher::Wake() {
  uint64_t one = 1;
  (void)!write(event_fd_, &one, sizeof one);
}

DirEvents DirWatcher::Wait(absl::Duration timeout) {
  DirEvents events;
  pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {event_fd_, POLLIN, 0}};
  int ms = -1;
  if (timeout != absl::InfiniteDuration()) {
    ms = static_cast<int>(absl::ToInt64Milliseconds(absl::Ceil(
        std::max(timeout, absl::ZeroDuration()), absl::Milliseconds(1))));
  }
  int n = poll(fds, 2, ms);
  if (n < 0 && errno != EINTR) {
    LOG_ERROR("poll on {}: {}", watches_.front().names.dir,
              std::strerror(errno));
  }
  if (n > 0 && (fds[1].revents & POLLIN)) {
    uint64_t count;
    (void)!read(event_fd_, &count, sizeof count);
  }
  if (n > 0 && (fds[0].revents & POLLIN)) Drain(&events);
  return events;
}

void DirWatcher::Drain(DirEvents* events) {
  alignas(inotify_event) char buf[4096];
  std::vector<bool> gone(watches_.size(), false);
  for (;;) {
    ssize_t len = read(inotify_fd_, buf, sizeof buf);
    if (len <= 0) break;
    for (char* p = buf; p < buf + len;) {
      auto* e = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + e->len;
      for (size_t i = 0; i < watches_.size(); ++i) {
        const Watch& w = watches_[i];
        if (e->wd == w.parent_wd && e->len > 0 && w.base == e->name &&
            Replaced(w)) {
          gone[i] = true;
        }
        if (e->wd != w.wd) continue;
        if (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
          gone[i] = true;
          continue;
        }
        if (e->len == 0) continue;
        std::string name = e->name;
        if (name == w.names.kubelet_socket &&
            (e->mask & (IN_CREATE | IN_MOVED_TO))) {
          events->kubelet_socket_created = true;
        }
        if (name == w.names.own_socket &&
            (e->mask & (IN_DELETE | IN_MOVED_FROM))) {
          events->own_socket_removed = true;
        }
      }
    }
  }
  for (size_t i = 0; i < watches_.size(); ++i) {
    if (!gone[i]) continue;
    LOG_WARN("{} was removed; recreating and watching it again",
             watches_[i].names.dir);
    events->own_socket_removed = true;
    Rewatch(watches_[i]);
  }
}

void DirWatcher::Rewatch(Watch& w) {
  // The old directory's watch goes with it (or stays on a directory no
  // longer at the path: removed here). The parent's watch is shared and
  // is simply added again.
  if (w.wd >= 0) inotify_rm_watch(inotify_fd_, w.wd);
  MakeDirs(w.names.dir, kPublicDirMode).IgnoreError();  // WatchNow tells
  if (absl::Status s = WatchNow(w); !s.ok()) {
    LOG_ERROR("cannot watch {} again: {}", w.names.dir, s.message());
  }
}

}  // namespace gdp
