#include "fake_nvml/control_watcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gdp::fake_nvml {
namespace {

constexpr uint32_t kWatchMask =
    IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE;

}  // namespace

absl::StatusOr<std::unique_ptr<ControlWatcher>> ControlWatcher::Start(
    const std::string& path, LineHandler handler, LineHandler history) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify_fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("inotify_init1: ", std::strerror(errno)));
  }
  if (inotify_add_watch(inotify_fd, dir.c_str(), kWatchMask) < 0) {
    const int error = errno;
    close(inotify_fd);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot watch the directory of control file ", path, ": ",
                     std::strerror(error)));
  }
  const int stop_fd = eventfd(0, EFD_CLOEXEC);
  if (stop_fd < 0) {
    const int error = errno;
    close(inotify_fd);
    return absl::FailedPreconditionError(
        absl::StrCat("eventfd: ", std::strerror(error)));
  }
  std::unique_ptr<ControlWatcher> watcher(
      new ControlWatcher(path, handler, inotify_fd, stop_fd));
  // The watch exists before this read, so nothing appended later is missed.
  watcher->SkipExisting(history);
  watcher->thread_ = std::thread(&ControlWatcher::Run, watcher.get());
  return watcher;
}

ControlWatcher::ControlWatcher(std::string path, LineHandler handler,
                               int inotify_fd, int stop_fd)
    : path_(std::move(path)),
      name_(std::filesystem::path(path_).filename()),
      handler_(handler),
      inotify_fd_(inotify_fd),
      stop_fd_(stop_fd),
      owner_(getpid()) {}

ControlWatcher::~ControlWatcher() {
  if (getpid() == owner_) {
    const uint64_t one = 1;
    while (write(stop_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    thread_.join();
  } else {
    // A forked child has a copy of this object but not the thread, and
    // signalling the shared eventfd would stop the parent's watcher.
    thread_.detach();
  }
  close(stop_fd_);
  close(inotify_fd_);
}

void ControlWatcher::Rewind() {
  inode_ = 0;
  offset_ = 0;
  line_number_ = 0;
  partial_.clear();
}

bool ControlWatcher::ReadMore() {
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) == 0 && (st.st_ino != inode_ || st.st_size < offset_)) {
    Rewind();
    inode_ = st.st_ino;
  }
  char buffer[4096];
  while (true) {
    const ssize_t n = pread(fd, buffer, sizeof(buffer), offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial_.append(buffer, static_cast<size_t>(n));
    offset_ += n;
  }
  close(fd);
  return true;
}

void ControlWatcher::SkipExisting(LineHandler history) {
  if (!ReadMore()) return;
  size_t start = 0;
  for (size_t end; (end = partial_.find('\n', start)) != std::string::npos;
       start = end + 1) {
    ++line_number_;
    if (history != nullptr) {
      history(line_number_,
              absl::string_view(partial_).substr(start, end - start));
    }
  }
  partial_.erase(0, start);
}

void ControlWatcher::ReadNewLines() {
  if (!ReadMore()) return;
  size_t start = 0;
  for (size_t end; (end = partial_.find('\n', start)) != std::string::npos;
       start = end + 1) {
    handler_(++line_number_,
             absl::string_view(partial_).substr(start, end - start));
  }
  partial_.erase(0, start);
}

void ControlWatcher::Run() {
  alignas(struct inotify_event) char events[8192];
  pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  while (true) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    bool relevant = false;
    ssize_t n;
    while ((n = read(inotify_fd_, events, sizeof(events))) > 0) {
      for (ssize_t at = 0; at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(events + at);
        const bool ours = event->len > 0 && name_ == event->name;
        if (ours && (event->mask & IN_DELETE) != 0) Rewind();
        relevant |= ours || (event->mask & IN_Q_OVERFLOW) != 0;
        at += sizeof(inotify_event) + event->len;
      }
    }
    if (relevant) ReadNewLines();
  }
}

}  // namespace gdp::fake_nvml
