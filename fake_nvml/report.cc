#include "fake_nvml/report.h"

#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"

namespace gdp::fake_nvml {

void Report(absl::string_view message) {
  const std::string line = absl::StrCat("fake NVML: ", message, "\n");
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n =
        write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    written += static_cast<size_t>(n);
  }
}

}  // namespace gdp::fake_nvml
