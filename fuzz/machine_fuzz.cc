// libFuzzer target: the fake NVML's machine file parser (fake_nvml/
// machine_loader.h) on any bytes: a machine or an error naming the line,
// never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fake_nvml/machine_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)gdp::fake_nvml::ParseMachine(text, "fuzz.yaml");
  return 0;
}
