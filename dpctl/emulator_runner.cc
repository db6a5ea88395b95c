#include "emulator_runner.h"

#include <unistd.h>

#include <utility>

namespace gdp::dpctl::testing {

EmulatorRunner::EmulatorRunner(Run run) {
  if (pipe(input_) != 0) return;
  thread_ = std::thread([this, run = std::move(run)] {
    code_ = run(&sink, input_[0], stop_.fd(), err);
  });
}

EmulatorRunner::~EmulatorRunner() {
  Stop();
  Join();
  for (int fd : input_) {
    if (fd >= 0) close(fd);
  }
}

void EmulatorRunner::Send(const std::string& line) {
  const std::string data = line + "\n";
  if (input_[1] < 0) return;
  ssize_t written = write(input_[1], data.data(), data.size());
  (void)written;
}

void EmulatorRunner::CloseInput() {
  if (input_[1] >= 0) close(input_[1]);
  input_[1] = -1;
}

void EmulatorRunner::Stop() { stop_.Signal(); }

int EmulatorRunner::Join() {
  if (thread_.joinable()) thread_.join();
  return code_;
}

}  // namespace gdp::dpctl::testing
