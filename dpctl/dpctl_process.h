// For tests that run the dpctl binary (DPCTL_BINARY, a compile definition
// of the test targets): stdin and stdout piped, stderr kept in a file.
#ifndef GDP_DPCTL_DPCTL_PROCESS_H_
#define GDP_DPCTL_DPCTL_PROCESS_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "test_support.h"
#include "testing/subprocess.h"

namespace gdp::dpctl::testing {

// Generous: the machine running the tests may be busy.
inline constexpr absl::Duration kLineWait = absl::Seconds(20);
inline constexpr absl::Duration kExitWait = absl::Seconds(60);

// `dpctl <args>`, started at once. Not thread-safe. The destructor kills
// and reaps a process still running.
class DpctlProcess {
 public:
  explicit DpctlProcess(std::vector<std::string> args);

  // Writes to its stdin. REQUIRES: stdin not closed.
  void Write(const std::string& data);
  // Closes its stdin (it sees end of input).
  void CloseStdin();
  // The next stdout line; "" at end of output or after `timeout`.
  std::string ReadLine(absl::Duration timeout = kLineWait);
  // Reads lines, each within kLineWait, until one contains `text`; returns
  // it, or "" when the output ended or stalled first.
  std::string ReadUntil(const std::string& text);
  void Signal(int signal);
  // Waits for the exit; the exit code (128 + signal if killed), or -1 when
  // still running after `timeout`.
  int Wait(absl::Duration timeout = kExitWait);
  // Everything left on stdout until end of output (at most 5 s).
  std::string RestOfStdout();
  // Its stderr so far.
  std::string Stderr();

 private:
  TempDir stderr_dir_;  // before p_: the file must exist while it runs
  ::gdp::testing::Subprocess p_;
};

}  // namespace gdp::dpctl::testing

#endif  // GDP_DPCTL_DPCTL_PROCESS_H_
