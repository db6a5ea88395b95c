// What every benchmark shares: the options that name the plugin, the fake
// NVML and its machine, and a fixture root made by `fake-nvml rootfs` with
// the plugin's command line pointing into it.
#ifndef GDP_BENCH_FIXTURE_H_
#define GDP_BENCH_FIXTURE_H_

#include <CLI/CLI.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gdp::bench {

struct FixtureOptions {
  std::string plugin, fake_lib, machine, rootfs_tool;
  // Extra plugin arguments; "{root}" in one becomes the fixture root.
  std::vector<std::string> plugin_args;
};

// Adds --plugin, --fake-lib, --machine, --rootfs-tool (required when
// `required`) and --plugin-arg to `app`, filling `o`; `o` must outlive the
// parse.
void AddFixtureOptions(CLI::App& app, FixtureOptions* o, bool required);

// Writes the fixture root to <dir>/root and returns the plugin's command
// line: kubelet socket <dir>/kp/kubelet.sock (the directory is made),
// sysfs and /dev under the root, then o.plugin_args.
// Result on failure: Internal when `fake-nvml rootfs` fails.
absl::StatusOr<std::vector<std::string>> MakeFixture(
    const FixtureOptions& o, const std::filesystem::path& dir);

// The plugin's environment: the fake NVML and its machine, and the control
// file when `control` is not empty.
std::map<std::string, std::string> PluginEnv(const FixtureOptions& o,
                                             const std::string& control = "");

}  // namespace gdp::bench

#endif  // GDP_BENCH_FIXTURE_H_
