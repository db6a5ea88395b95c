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
    : TempDir("dpctl"),
      Subprocess({.argv = WithBinary(std::move(args)),
                  .stderr_path = File("stderr"),
                  .pipe_stdin = true}) {}

std::string DpctlProcess::ReadUntil(const std::string& text) {
  for (std::optional<std::string> line = Subprocess::ReadLine(kLineWait);
       line.has_value(); line = Subprocess::ReadLine(kLineWait)) {
    if (absl::StrContains(*line, text)) return *line;
  }
  return "";
}

}  // namespace gdp::dpctl::testing
