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

// A pipe whose read end becomes readable, for good, once Signal is called.
// Thread-safe.
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
  // Idempotent.
  void Signal();
  bool signaled() const { return signaled_.load(); }

 private:
  int fds_[2];
  std::atomic<bool> signaled_{false};
};

// Blocks until one of `fds` (-1 entries are ignored) is readable or hung
// up; returns the index of the first such fd (0 when poll fails).
int WaitReadable(std::initializer_list<int> fds);

// Reads `fd` until end of input or until `stop_fd` is readable, calling
// `on_line` with each line (without its newline; a last line without one
// is passed too, unless stopped).
void ReadLines(int fd, int stop_fd,
               const std::function<void(const std::string&)>& on_line);

// ReadLines for commands: each line is stripped of surrounding white space
// and split into words at spaces and tabs; blank lines are skipped.
// `on_command` gets the stripped line and its words (never empty), both
// valid only during the call.
void ReadCommands(
    int fd, int stop_fd,
    const std::function<void(absl::string_view line,
                             const std::vector<absl::string_view>& words)>&
        on_command);

// How an emulator's run ends: the exit code asked for first, and a Latch
// that wakes every poll loop watching it once the end is asked for.
// Thread-safe.
class RunEnd {
 public:
  // `ok_code`: the exit code when a signal ends the run (Wait).
  explicit RunEnd(int ok_code) : ok_code_(ok_code) {}

  // False when the latch's pipe could not be created.
  bool ok() const { return latch_.ok(); }
  // Readable once Stop has been called.
  int fd() const { return latch_.fd(); }
  // Asks for the end; the first code given wins.
  void Stop(int code);
  // Blocks until Stop is called, or until `stop_fd` (-1: none) is
  // readable, which counts as Stop(ok_code).
  void Wait(int stop_fd);
  // The first code given to Stop; -1 before any.
  int code() const { return code_.load(); }

 private:
  const int ok_code_;
  Latch latch_;
  std::atomic<int> code_{-1};
};

// Runs `emulator` (kubelet.cc, dra_kubelet.cc): Start; on failure writes
// "error: <message>" to `err`, calls Finish and returns `start_failed`.
// Otherwise a thread of its own reads commands from `input_fd`
// (ReadCommands, each passed to RunCommand) until end of input or the end,
// while this one waits for the end (end().Wait(stop_fd)); then calls
// Finish, joins the reader and returns Finish's exit code. `Emulator`
// provides absl::Status Start(),
// void RunCommand(absl::string_view line,
//                 const std::vector<absl::string_view>& words),
// int Finish(), which must call end().Stop, and RunEnd& end().
template <typename Emulator>
int RunEmulator(Emulator& emulator, int input_fd, int stop_fd, int start_failed,
                std::ostream& err) {
  RunEnd& end = emulator.end();
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
  end.Wait(stop_fd);
  const int code = emulator.Finish();
  reader.join();
  return code;
}

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_COMMAND_INPUT_H_
