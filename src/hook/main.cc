// gdp-cdi-hook: the OCI hook that applies a container's GPU memory limits
// at creation (see hook/apply.h and cdi/memory_limit.h), and its installer.
//   gdp-cdi-hook apply-memory-limits --driver-root DIR [--gpu-id UUID]...
//                [--share KEY,UUID,MiB]...      (OCI state on stdin)
//   gdp-cdi-hook apply-cuda-memory-limits ...   (NVIDIA's name and flags)
//   gdp-cdi-hook install DIR    (copies this hook's bin/ and lib/ into DIR)
// Exit 0 when done or nothing was asked; 1 with one line on stderr, which
// the runtime prints, when a limit was asked and not applied; 2 for usage.
#include <limits.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hook/apply.h"

namespace {

int Fail(const std::string& message, int code) {
  std::string line = absl::StrCat("gdp-cdi-hook: ", message, "\n");
  // One line: the runtime prints what the hook wrote.
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    if (line[i] == '\n') line[i] = ' ';
  }
  fputs(line.c_str(), stderr);
  return code;
}

// The directory above the one holding this executable.
std::string BundleRoot() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string exe(buf, static_cast<size_t>(n));
  std::string dir = exe.substr(0, exe.rfind('/'));
  return dir.substr(0, dir.rfind('/'));
}

}  // namespace

int main(int argc, char** argv) {
  // NVML's messages stay out of the one line the runtime shows.
  spdlog::set_level(spdlog::level::off);
  std::vector<std::string> args(argv, argv + argc);
  if (args.size() >= 2 && args[1] == "install") {
    if (args.size() != 3 || args[2].empty() || args[2][0] != '/') {
      return Fail("usage: gdp-cdi-hook install <absolute directory>", 2);
    }
    std::string from = BundleRoot();
    if (absl::Status s = gdp::hook::InstallBundle(from, args[2]); !s.ok()) {
      return Fail(std::string(s.message()), 1);
    }
    return 0;
  }
  if (absl::Status s = gdp::hook::ApplyMemoryLimits(args); !s.ok()) {
    return Fail(std::string(s.message()),
                s.code() == absl::StatusCode::kInvalidArgument &&
                        (args.size() < 2 || args[1].rfind("apply-", 0) != 0)
                    ? 2
                    : 1);
  }
  return 0;
}
