// Helpers for the emulators' main loops (`dpctl kubelet`, `dpctl
// dra-kubelet`): a latch that wakes every poll loop watching it, a reader
// of commands, one per line, from a file descriptor, and the run that
// both emulators share.
#ifndef GDP_DPCTL_COMMAND_INPUT_H_
#define GDP_DPCTL_COMMAND_INPUT_H_

#include <atomic>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gdp::dpctl {

// A pipe whose read end becomes readable, for good, once Signal is called,
// and the code given to the first Signal: how a run ends. Thread-safe.
class Latch {
 public:
  Latch();
  ~Latch();
  Latch(const Latch&) = delete;
  Latch& operator=(const Latch&) = delete;

  // False when the pipe could not be created (fd() is then -1).
  bool ok() const { return fds_[0] >= 0; }
  // The read end; readable once Signal has been called.
  int fd() const { return fds_[0]; }
  // The first call's `code` wins; later calls change nothing.
  void Signal(int code = 0);
  bool signaled() const { return code() != -1; }
  // The code given to the first Signal; -1 before any.
  int code() const { return code_.load(); }

 private:
  int fds_[2];
  std::atomic<int> code_{-1};
};

// Blocks until one of `fds` (-1 entries are ignored) is readable or hung
// up; returns the index of the first such fd (0 when poll fails).
int WaitReadable(std::initializer_list<int> fds);

// Reads `fd` until end of input or until `stop_fd` is readable, one
// command per line (a last line without a newline too, unless stopped):
// each line is stripped of surrounding white space and split into words at
// spaces and tabs; blank lines are skipped. `on_command` gets the stripped
// line and its words (never empty), both valid only during the call.
void ReadCommands(
    int fd, int stop_fd,
    const std::function<void(absl::string_view line,
                             const std::vector<absl::string_view>& words)>&
        on_command);

// Runs `emulator` (kubelet.cc, dra_kubelet.cc): Start; on failure writes
// "error: <message>" to `err`, calls Finish and returns `start_failed`.
// Otherwise a thread of its own reads commands from `input_fd`
// (ReadCommands, each passed to RunCommand) until end of input or the end
// (end() signaled), while this one waits for the end or for `stop_fd` (-1:
// none) to become readable; then calls Finish, joins the reader and
// returns Finish's exit code. `Emulator` provides absl::Status Start(),
// void RunCommand(absl::string_view line,
//                 const std::vector<absl::string_view>& words),
// int Finish(), which must signal end(), and Latch& end().
template <typename Emulator>
int RunEmulator(Emulator& emulator, int input_fd, int stop_fd, int start_failed,
                std::ostream& err) {
  Latch& end = emulator.end();
  if (absl::Status s = emulator.Start(); !s.ok()) {
    err << "error: " << s.message() << std::endl;
    emulator.Finish();
    return start_failed;
  }
  std::thread reader([&emulator, &end, input_fd] {
    ReadCommands(input_fd, end.fd(),
                 [&emulator](absl::string_view line,
                             const std::vector<absl::string_view>& words) {
                   emulator.RunCommand(line, words);
                 });
  });
  WaitReadable({end.fd(), stop_fd});
  const int code = emulator.Finish();
  reader.join();
  return code;
}

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_COMMAND_INPUT_H_
