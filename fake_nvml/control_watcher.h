// Follows the control file named by $FAKE_NVML_CONTROL: a background thread
// waits on inotify for changes in the file's directory and hands every new
// complete line, once and in order, to a handler.
#ifndef GDP_FAKE_NVML_CONTROL_WATCHER_H_
#define GDP_FAKE_NVML_CONTROL_WATCHER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gdp::fake_nvml {

class ControlWatcher {
 public:
  // Called on the watcher thread with the 1-based line number in the file
  // and the line without its newline.
  using LineHandler = void (*)(int line_number, absl::string_view line);

  // Starts following `path`. The file need not exist yet, but its directory
  // must. Lines already complete in the file now are not new: they go to
  // `history` (if not null), in order, before Start returns; a trailing
  // partial line counts as new once it is completed. If the file is
  // truncated or replaced, reading restarts from its beginning (and line
  // numbers from 1). Errors: FailedPrecondition when the directory cannot
  // be watched.
  static absl::StatusOr<std::unique_ptr<ControlWatcher>> Start(
      const std::string& path, LineHandler handler,
      LineHandler history = nullptr);

  // Stops the thread and joins it; returns promptly. In a child forked
  // while the watcher ran, only releases the child's copies of the file
  // descriptors.
  ~ControlWatcher();

  ControlWatcher(const ControlWatcher&) = delete;
  ControlWatcher& operator=(const ControlWatcher&) = delete;

 private:
  ControlWatcher(std::string path, LineHandler handler, int inotify_fd,
                 int stop_fd);

  // Reads what is in the file now, handing its complete lines to `history`
  // (if not null) rather than to the handler.
  void SkipExisting(LineHandler history);
  // Dispatches the complete lines appended since the last read.
  void ReadNewLines();
  // Reads from offset_ to the end of the file into partial_, first
  // restarting from the beginning if the file was truncated or replaced.
  // Returns false when the file does not exist.
  bool ReadMore();
  // Forgets the reading position (the file was deleted).
  void Rewind();
  // Thread body: waits for inotify events or the stop signal.
  void Run();

  const std::string path_;
  const std::string name_;  // the file name inside its directory
  const LineHandler handler_;
  const int inotify_fd_;
  const int stop_fd_;  // an eventfd written by the destructor
  const pid_t owner_;  // the process that started the thread
  // Reading position; touched only by Start and then the thread.
  ino_t inode_ = 0;
  off_t offset_ = 0;
  int line_number_ = 0;
  std::string partial_;  // bytes read past the last newline
  std::thread thread_;
};

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_CONTROL_WATCHER_H_
