// libFuzzer target: one fault control line of the fake NVML (fake_nvml/
// control_command.h) on any bytes: a command, nothing, or an error.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "fake_nvml/control_command.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view line(reinterpret_cast<const char*>(data), size);
  (void)gdp::fake_nvml::ParseControlLine(line);
  return 0;
}
