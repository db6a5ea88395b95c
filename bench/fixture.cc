#include "bench/fixture.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "testing/subprocess.h"

namespace gdp::bench {

namespace fs = std::filesystem;

void AddFixtureOptions(CLI::App& app, FixtureOptions* o, bool required) {
  app.add_option("--plugin", o->plugin, "gpu-device-plugin binary")
      ->required(required);
  app.add_option("--fake-lib", o->fake_lib,
                 "directory of the fake libnvidia-ml.so.1")
      ->required(required);
  app.add_option("--machine", o->machine, "fake NVML machine file")
      ->required(required);
  app.add_option("--rootfs-tool", o->rootfs_tool, "the fake-nvml tool")
      ->required(required);
  app.add_option("--plugin-arg", o->plugin_args,
                 "extra plugin argument ({root}: the fixture root)");
}

absl::StatusOr<std::vector<std::string>> MakeFixture(const FixtureOptions& o,
                                                     const fs::path& dir) {
  fs::create_directories(dir / "kp");
  const fs::path root = dir / "root";
  testing::Subprocess tool({.argv = {o.rootfs_tool, "rootfs", "--machine",
                                     o.machine, "--out", root.string()}});
  if (tool.Wait(absl::Seconds(10)) != 0) {
    return absl::InternalError(
        absl::StrCat("fake-nvml rootfs failed for ", o.machine));
  }
  std::vector<std::string> argv = {o.plugin,
                                   "--kubelet-socket",
                                   (dir / "kp/kubelet.sock").string(),
                                   "--sysfs-root",
                                   (root / "sys").string(),
                                   "--dev-root",
                                   root.string()};
  // Health state in the fixture, never in the host's
  // /var/lib/gpu-device-plugin (unless an argument names its own).
  if (std::none_of(o.plugin_args.begin(), o.plugin_args.end(),
                   [](const std::string& a) {
                     return a.rfind("--state-dir", 0) == 0;
                   })) {
    argv.insert(argv.end(), {"--state-dir", (dir / "state").string()});
  }
  for (std::string arg : o.plugin_args) {
    if (size_t at = arg.find("{root}"); at != std::string::npos) {
      arg.replace(at, 6, root.string());
    }
    argv.push_back(arg);
  }
  return argv;
}

std::map<std::string, std::string> PluginEnv(const FixtureOptions& o,
                                             const std::string& control) {
  std::map<std::string, std::string> env = {{"LD_LIBRARY_PATH", o.fake_lib},
                                            {"FAKE_NVML_MACHINE", o.machine}};
  if (!control.empty()) env["FAKE_NVML_CONTROL"] = control;
  return env;
}

}  // namespace gdp::bench
