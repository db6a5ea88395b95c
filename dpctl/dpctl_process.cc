#include "dpctl_process.h"

#include <optional>
#include <utility>

#include "absl/strings/match.h"

namespace gdp::dpctl::testing {
namespace {

std::vector<std::string> WithBinary(std::vector<std::string> args) {
  args.insert(args.begin(), DPCTL_BINARY);
  return args;
}

}  // namespace

DpctlProcess::DpctlProcess(std::vector<std::string> args)
    : p_({.argv = WithBinary(std::move(args)),
          .stderr_path = stderr_dir_.File("stderr"),
          .pipe_stdin = true}) {}

void DpctlProcess::Write(const std::string& data) { p_.Write(data); }

void DpctlProcess::CloseStdin() { p_.CloseStdin(); }

std::string DpctlProcess::ReadLine(absl::Duration timeout) {
  return p_.ReadLine(timeout).value_or("");
}

std::string DpctlProcess::ReadUntil(const std::string& text) {
  for (std::optional<std::string> line = p_.ReadLine(kLineWait);
       line.has_value(); line = p_.ReadLine(kLineWait)) {
    if (absl::StrContains(*line, text)) return *line;
  }
  return "";
}

void DpctlProcess::Signal(int signal) { p_.Signal(signal); }

int DpctlProcess::Wait(absl::Duration timeout) {
  return p_.Wait(timeout).value_or(-1);
}

std::string DpctlProcess::RestOfStdout() {
  return p_.ReadAll(absl::Seconds(5));
}

std::string DpctlProcess::Stderr() { return p_.Stderr(); }

}  // namespace gdp::dpctl::testing
