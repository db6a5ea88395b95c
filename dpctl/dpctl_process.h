// For tests that run the dpctl binary (DPCTL_BINARY, a compile definition
// of the test targets): stdin and stdout piped, stderr kept in a file.
#ifndef GDP_DPCTL_DPCTL_PROCESS_H_
#define GDP_DPCTL_DPCTL_PROCESS_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace gdp::dpctl::testing {

// Generous: the machine running the tests may be busy.
inline constexpr absl::Duration kLineWait = absl::Seconds(20);
inline constexpr absl::Duration kExitWait = absl::Seconds(60);

// `dpctl <args>`, started at once: a Subprocess (Write, CloseStdin, Signal,
// Stderr as there) whose reads and waits have the waits above and answer
// plain values. Not thread-safe. The destructor kills and reaps a process
// still running. The TempDir base holds the stderr file: it is made before
// the process starts and removed after it is reaped.
class DpctlProcess : private ::gdp::testing::TempDir,
                     public ::gdp::testing::Subprocess {
 public:
  explicit DpctlProcess(std::vector<std::string> args);

  // The next stdout line; "" at end of output or after `timeout`.
  std::string ReadLine(absl::Duration timeout = kLineWait) {
    return Subprocess::ReadLine(timeout).value_or("");
  }
  // Reads lines, each within kLineWait, until one contains `text`; returns
  // it, or "" when the output ended or stalled first.
  std::string ReadUntil(const std::string& text);
  // Waits for the exit; the exit code (128 + signal if killed), or -1 when
  // still running after `timeout`.
  int Wait(absl::Duration timeout = kExitWait) {
    return Subprocess::Wait(timeout).value_or(-1);
  }
  // Everything left on stdout until end of output (at most 5 s).
  std::string RestOfStdout() { return ReadAll(absl::Seconds(5)); }
};

}  // namespace gdp::dpctl::testing

#endif  // GDP_DPCTL_DPCTL_PROCESS_H_
