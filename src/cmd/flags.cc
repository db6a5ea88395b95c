#include "cmd/flags.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

namespace gdp {

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
                 "ListAndWatch send)")
      ->envname("LOG_VERBOSITY");

  ParsedFlags out;
  app.add_subcommand("discover",
                     "print the GPUs NVML reports, as JSON, and exit")
      ->callback([&out] { out.command = Command::kDiscover; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    out.exit_code = app.exit(e) == 0 ? 0 : 2;
    return out;
  }
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
