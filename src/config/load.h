// The daemon's configuration from its three sources: a flag or its
// environment variable beats the config file, which beats the default.
// Called at start (by ParseFlags) and on every reload (by main).
#ifndef GDP_CONFIG_LOAD_H_
#define GDP_CONFIG_LOAD_H_

#include <functional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "config/config.h"

namespace gdp {

// The settings the config file can give that a flag or its environment
// variable gave, by name (Setting::name() in settings.h: "--mps-root"); the
// config file does not change these.
using ExplicitSettings = std::set<std::string, std::less<>>;

// Builds the configuration: `from_flags` holds every setting as the flags
// and environment left it (their defaults where not given); if
// from_flags.config_file is not empty, that file is read (config_file.h)
// and each setting it gives replaces the one in `from_flags` unless the
// setting is in `given`. Settings only the file has (resources,
// sharing) come from the file when it gives them. The result is then
// validated as a whole.
// Result on failure: the file's read or parse error, or InvalidArgument
// from Validate naming the setting where it came from: "<file>:<line>:
// <field path>: ..." for a value from the file, "--<flag>: ..." for one
// from a flag or its variable.
// Thread-safe; reads the file system only.
absl::StatusOr<Config> LoadConfig(const Config& from_flags,
                                  const ExplicitSettings& given);

}  // namespace gdp

#endif  // GDP_CONFIG_LOAD_H_
