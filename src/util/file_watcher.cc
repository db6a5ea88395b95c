#include "util/file_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "util/logging.h"
#include "util/read_file.h"

namespace gdp {
namespace {

// Everything that can change what `path` reads as, including a symlinked
// directory entry (..data) being swapped.
constexpr uint32_t kMask = IN_CLOSE_WRITE | IN_CREATE | IN_DELETE |
                           IN_MOVED_TO | IN_MOVED_FROM | IN_MODIFY | IN_ATTRIB;

// The longest a burst of directory events may put a change off.
constexpr absl::Duration kMaxSettle = absl::Seconds(2);

int PollMs(absl::Duration d) {
  if (d == absl::InfiniteDuration()) return -1;
  return static_cast<int>(absl::ToInt64Milliseconds(
      absl::Ceil(std::max(d, absl::ZeroDuration()), absl::Milliseconds(1))));
}

}  // namespace

std::string ReadFileOrEmpty(const std::string& path) {
  absl::StatusOr<std::string> text =
      ReadRegularFile(path, {.max_bytes = kMaxCompared});
  return text.ok() ? *std::move(text) : "";
}

absl::StatusOr<std::unique_ptr<FileWatcher>> FileWatcher::Create(
    const std::string& path) {
  int ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (ev < 0) {
    return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  if (path.empty()) {
    return std::unique_ptr<FileWatcher>(new FileWatcher("", -1, ev));
  }
  int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (in < 0) {
    close(ev);
    return absl::InternalError(
        absl::StrCat("inotify_init1: ", std::strerror(errno)));
  }
  auto w = std::unique_ptr<FileWatcher>(new FileWatcher(path, in, ev));
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (inotify_add_watch(in, dir.c_str(), kMask) < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot watch ", dir, ": ", std::strerror(errno)));
  }
  w->content_ = ReadFileOrEmpty(path);
  return w;
}

FileWatcher::FileWatcher(std::string path, int inotify_fd, int event_fd)
    : path_(std::move(path)), inotify_fd_(inotify_fd), event_fd_(event_fd) {}

FileWatcher::~FileWatcher() {
  if (inotify_fd_ >= 0) close(inotify_fd_);
  close(event_fd_);
}

void FileWatcher::Wake() {
  uint64_t one = 1;
  (void)!write(event_fd_, &one, sizeof one);
}

bool FileWatcher::DrainInotify() {
  alignas(inotify_event) char buf[4096];
  bool any = false;
  while (read(inotify_fd_, buf, sizeof buf) > 0) any = true;
  return any;
}

FileWatcher::Event FileWatcher::Wait(absl::Duration timeout,
                                     absl::Duration settle) {
  pollfd fds[2] = {{event_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
  int nfds = inotify_fd_ >= 0 ? 2 : 1;
  int n = poll(fds, nfds, PollMs(timeout));
  if (n < 0 && errno != EINTR) {
    LOG_ERROR("poll while watching {}: {}", path_, std::strerror(errno));
  }
  if (n <= 0) return Event::kNone;
  if (fds[0].revents & POLLIN) {
    uint64_t count;
    (void)!read(event_fd_, &count, sizeof count);
    return Event::kNone;
  }
  if (nfds < 2 || !(fds[1].revents & POLLIN)) return Event::kNone;
  // Let a burst of events (a ConfigMap swap is several) settle, for at most
  // kMaxSettle: a directory that never goes quiet (another file written
  // there all the time) must not hold a reload off for good. Wake() ends
  // the settling at once.
  const absl::Time give_up = absl::Now() + kMaxSettle;
  while (DrainInotify()) {
    const absl::Duration left = give_up - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    pollfd quiet[2] = {{event_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    if (poll(quiet, 2, PollMs(std::min(settle, left))) <= 0) break;
    if (quiet[0].revents & POLLIN) {
      uint64_t count;
      (void)!read(event_fd_, &count, sizeof count);
      break;
    }
  }
  std::string now = ReadFileOrEmpty(path_);
  if (now == content_) return Event::kNone;
  content_ = std::move(now);
  return Event::kChanged;
}

}  // namespace gdp
