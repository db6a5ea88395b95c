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

// What both emulators (kubelet.cc, dra_kubelet.cc) are: components that
// Start starts and Stop stops, commands read one per line, and an
// automatic part on a thread of its own that may end the run.
class Emulator {
 public:
  virtual ~Emulator() = default;

  // Start; on failure writes "error: <message>" to `err`, calls Stop and
  // returns `start_failed`. Otherwise runs Automatic on a thread of its own
  // and reads commands from `input_fd` on another (ReadCommands: "quit"
  // ends the run, every other command goes to RunCommand) until end of
  // input or the end, while this one waits for the end or for `stop_fd`
  // (-1: none) to become readable. Then ends the run with 0, calls Stop,
  // joins both threads and returns the code the run ended with first.
  int Run(int input_fd, int stop_fd, int start_failed, std::ostream& err);

 protected:
  virtual absl::Status Start() = 0;
  // Runs one command: `line` split into `words` (not empty, not "quit").
  virtual void RunCommand(absl::string_view line,
                          const std::vector<absl::string_view>& words) = 0;
  // The automatic part; returns soon after Stop.
  virtual void Automatic() = 0;
  // Stops the components started by Start.
  virtual void Stop() = 0;
  // Ends the run with `code`, unless it has ended already.
  void End(int code) { end_.Signal(code); }

 private:
  Latch end_;
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_COMMAND_INPUT_H_
