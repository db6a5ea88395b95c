// Runs a program as a child process for integration tests and benchmarks:
// stdout (and optionally stdin) through pipes, stderr to a file, signals,
// and line reads with deadlines.
#ifndef GDP_TESTING_SUBPROCESS_H_
#define GDP_TESTING_SUBPROCESS_H_

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace gdp::testing {

struct SpawnOptions {
  std::vector<std::string> argv = {};           // argv[0]: the program path
  std::map<std::string, std::string> env = {};  // set on top of ours
  std::vector<std::string> unset_env = {};      // removed from it
  std::string stderr_path = {};                 // empty: inherit
  bool pipe_stdin = false;
};

// Not thread-safe. The destructor kills (SIGKILL) and reaps a child still
// running.
class Subprocess {
 public:
  // Starts the child. Aborts the test binary if fork/exec setup fails;
  // exec failure shows as exit status 127.
  explicit Subprocess(SpawnOptions options);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }

  // The next stdout line (without '\n'), or nullopt at EOF or deadline.
  std::optional<std::string> ReadLine(absl::Duration timeout);

  // Everything on stdout until EOF (or the deadline), unread lines included.
  std::string ReadAll(absl::Duration timeout);

  // Writes to the child's stdin. REQUIRES: pipe_stdin, stdin not closed.
  void Write(const std::string& data);
  void WriteLine(const std::string& line) { Write(line + "\n"); }
  // Closes the child's stdin (it sees EOF).
  void CloseStdin();

  void Signal(int sig);

  // Waits for exit; returns the exit code, 128+signal if killed by one, or
  // nullopt if still running at the deadline.
  std::optional<int> Wait(absl::Duration timeout);

  // The child's stderr so far (when redirected to a file).
  std::string Stderr() const;

 private:
  SpawnOptions options_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stdin_fd_ = -1;
  std::string buffer_;
  std::optional<int> exit_code_;
};

}  // namespace gdp::testing

#endif  // GDP_TESTING_SUBPROCESS_H_
