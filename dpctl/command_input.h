// Helpers for the emulators' main loops: a latch that wakes every poll loop
// watching it, and a reader of commands, one per line, from a file
// descriptor.
#ifndef GDP_DPCTL_COMMAND_INPUT_H_
#define GDP_DPCTL_COMMAND_INPUT_H_

#include <atomic>
#include <functional>
#include <initializer_list>
#include <string>

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

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_COMMAND_INPUT_H_
