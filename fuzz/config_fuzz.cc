// libFuzzer target: the config file parser (config/config_file.h) on any
// bytes. It must answer (a config or an error naming the line) without
// crashing, hanging or allocating without bound.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "config/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  (void)gdp::ParseConfigFile(text, "fuzz.yaml");
  return 0;
}
