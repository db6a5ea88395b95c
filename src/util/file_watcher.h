// Watches one file for content changes, the way ConfigMap volumes change
// files: written in place, replaced by rename, or swapped in through a
// symlinked directory (..data). Also wakes on request, so one thread can wait
// for "the config changed" and "reload or stop now" together.
#ifndef GDP_UTIL_FILE_WATCHER_H_
#define GDP_UTIL_FILE_WATCHER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gdp {

// Wait() is for one thread; Wake() may be called from any thread.
class FileWatcher {
 public:
  // Watches the directory holding `path` (which must exist); with an empty
  // `path`, only Wake() ends a Wait. The file's current content is the
  // baseline. Result on failure: the inotify error naming the directory.
  static absl::StatusOr<std::unique_ptr<FileWatcher>> Create(
      const std::string& path);
  ~FileWatcher();
  FileWatcher(const FileWatcher&) = delete;
  FileWatcher& operator=(const FileWatcher&) = delete;

  enum class Event { kNone, kChanged };

  // Blocks until Wake(), `timeout`, or a change in the directory after which
  // the file's content (read after `settle` of quiet, so a burst of events
  // makes one change; at most 2 s of settling however busy the directory
  // is, and a Wake() cuts it short) differs from the last content seen.
  // Returns kChanged in that case (the new content becomes the baseline),
  // else kNone.
  Event Wait(absl::Duration timeout,
             absl::Duration settle = absl::Milliseconds(100));

  // Makes the current or next Wait() return at once.
  void Wake();

 private:
  FileWatcher(std::string path, int inotify_fd, int event_fd);
  bool DrainInotify();  // true if any event was read

  std::string path_;
  std::string content_;  // last content seen; empty if unreadable
  int inotify_fd_;       // -1 without a path
  int event_fd_;
};

// How much of a file ReadFileOrEmpty reads: more than any config file may
// be (config_file.cc refuses those).
inline constexpr size_t kMaxCompared = 4 << 20;

// The content of the regular file at `path` (a symlink followed), or an
// empty string if it cannot be read, is not a regular file (a FIFO is not
// waited on) or holds more than kMaxCompared bytes (ReadRegularFile).
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace gdp

#endif  // GDP_UTIL_FILE_WATCHER_H_
