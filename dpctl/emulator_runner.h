// For tests of the emulators (RunKubelet, RunDraKubelet): runs one on a
// thread with pipes for its input and stop file descriptors and a
// RecordingSink for its events.
#ifndef GDP_DPCTL_EMULATOR_RUNNER_H_
#define GDP_DPCTL_EMULATOR_RUNNER_H_

#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>

#include "command_input.h"
#include "events.h"
#include "test_support.h"

namespace gdp::dpctl::testing {

class EmulatorRunner {
 public:
  // Runs `run(events, input_fd, stop_fd, err)` on a thread at once.
  using Run = std::function<int(EventSink* events, int input_fd, int stop_fd,
                                std::ostream& err)>;
  explicit EmulatorRunner(Run run);
  // Stops and joins the emulator.
  ~EmulatorRunner();

  EmulatorRunner(const EmulatorRunner&) = delete;
  EmulatorRunner& operator=(const EmulatorRunner&) = delete;

  // Writes `line` and a newline to the emulator's input.
  void Send(const std::string& line);
  // Ends the emulator's input.
  void CloseInput();
  // Makes the stop fd readable (as a signal would). Idempotent.
  void Stop();
  // Waits for the emulator to return; its exit code.
  int Join();

  RecordingSink sink;
  std::ostringstream err;

 private:
  int input_[2] = {-1, -1};
  Latch stop_;
  int code_ = -1;
  std::thread thread_;
};

}  // namespace gdp::dpctl::testing

#endif  // GDP_DPCTL_EMULATOR_RUNNER_H_
