// Command line and environment of gpu-device-plugin, with NVIDIA's flag and
// variable names. The only place that reads the environment.
#ifndef GDP_CMD_FLAGS_H_
#define GDP_CMD_FLAGS_H_

#include <optional>

#include "config/config.h"

namespace gdp {

enum class Command { kServe, kDiscover };

struct ParsedFlags {
  std::optional<Config> config;  // absent: exit with exit_code
  Command command = Command::kServe;
  int exit_code = 0;
};

// Parses argv and the environment: a flag beats its environment variable,
// which beats the default. Prints --help/--version text to stdout and usage
// errors (naming the flag or variable) to stderr; then config is absent and
// exit_code is 0 for help/version, 2 for a usage or validation error.
ParsedFlags ParseFlags(int argc, const char* const* argv);

}  // namespace gdp

#endif  // GDP_CMD_FLAGS_H_
