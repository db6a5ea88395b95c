#include "cmd/flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

namespace gdp {

namespace {

// klog spells verbosity -v=N or --v=N (Go flag syntax), which CLI11 cannot
// declare; rewrite those to --verbosity.
std::vector<std::string> NormalizeKlogVerbosity(int argc,
                                                const char* const* argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("-v=", 0) == 0 || a.rfind("--v=", 0) == 0) {
      out.push_back("--verbosity=" + a.substr(a.find('=') + 1));
    } else if (a == "--v") {
      out.push_back("--verbosity");
    } else {
      out.push_back(a);
    }
  }
  std::reverse(out.begin(), out.end());  // CLI11 parses a reversed vector
  return out;
}

}  // namespace

ParsedFlags ParseFlags(int argc, const char* const* argv) {
  Config c;
  CLI::App app{
      "Kubernetes device plugin for NVIDIA GPUs: advertises the node's GPUs "
      "to the kubelet as nvidia.com/gpu and answers its allocations.",
      "gpu-device-plugin"};
  app.set_version_flag("--version", GDP_VERSION);
  app.option_defaults()->always_capture_default();

  app.add_option("--kubelet-socket", c.kubelet_socket,
                 "the kubelet's registration socket; our socket goes beside it")
      ->envname("KUBELET_SOCKET");
  app.add_option(
         "--driver-root,--nvidia-driver-root", c.driver_root,
         "root where the NVIDIA driver (libnvidia-ml.so.1) is installed")
      ->envname("NVIDIA_DRIVER_ROOT");
  app.add_option("--dev-root,--nvidia-dev-root", c.dev_root,
                 "root of the /dev/nvidia* nodes on the host [default: the "
                 "driver root]")
      ->envname("NVIDIA_DEV_ROOT");
  app.add_option("--sysfs-root", c.sysfs_root,
                 "where sysfs is mounted (NUMA nodes of GPUs are read there)")
      ->envname("SYSFS_ROOT");
  app.add_flag("--fail-on-init-error{true}", c.fail_on_init_error,
               "exit if NVML cannot be loaded or initialised; with =false, "
               "stay up and retry every 30 s")
      ->envname("FAIL_ON_INIT_ERROR");
  app.add_flag("--pass-device-specs{true}", c.pass_device_specs,
               "pass /dev/nvidia* device specs in Allocate answers (needed "
               "with the CPU manager's static policy)")
      ->envname("PASS_DEVICE_SPECS");
  std::string id_strategy = "uuid";
  app.add_option("--device-id-strategy", id_strategy,
                 "how devices are named to the kubelet: uuid or index")
      ->envname("DEVICE_ID_STRATEGY")
      ->check(CLI::IsMember({"uuid", "index"}));
  app.add_option("-v,--verbosity", c.verbosity,
                 "log verbosity (klog -v level: 1 logs every RPC, 2 every "
                 "ListAndWatch send); -v=N and --v=N work too")
      ->envname("LOG_VERBOSITY");
  int retry_s = static_cast<int>(absl::ToInt64Seconds(c.nvml_retry_interval));
  app.add_option("--nvml-retry-interval", retry_s,
                 "seconds between NVML retries with --fail-on-init-error=false")
      ->check(CLI::PositiveNumber);

  ParsedFlags out;
  app.add_subcommand("discover",
                     "print the GPUs NVML reports, as JSON, and exit")
      ->callback([&out] { out.command = Command::kDiscover; });

  try {
    std::vector<std::string> args = NormalizeKlogVerbosity(argc, argv);
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    out.exit_code = app.exit(e) == 0 ? 0 : 2;
    return out;
  }
  c.nvml_retry_interval = absl::Seconds(retry_s);
  c.device_id_strategy = id_strategy == "index" ? DeviceIdStrategy::kIndex
                                                : DeviceIdStrategy::kUuid;
  if (absl::Status s = Validate(c); !s.ok()) {
    std::cerr << "gpu-device-plugin: " << s.message() << "\n";
    out.exit_code = 2;
    return out;
  }
  out.config = c;
  return out;
}

}  // namespace gdp
