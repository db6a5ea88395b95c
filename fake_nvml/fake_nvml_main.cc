// fake-nvml: helper tool for tests and the demo around the fake NVML.
//
//   fake-nvml rootfs --machine FILE --out DIR [--device-nodes auto|char|files]
//
// writes the fixture root described in rootfs.h for the machine in FILE.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "fake_nvml/machine_loader.h"
#include "fake_nvml/rootfs.h"

int main(int argc, char** argv) {
  CLI::App app(
      "Helper tool for the fake NVML library (libnvidia-ml.so.1 driven by a "
      "machine YAML file).",
      "fake-nvml");
  app.require_subcommand(1);

  std::string machine_path;
  std::string out_dir;
  std::string device_nodes = "auto";
  CLI::App* rootfs = app.add_subcommand(
      "rootfs",
      "Write a fixture root for a machine: each GPU's sysfs directory "
      "(numa_node, class) under sys/devices/pci<domain>:<host bridge>/... as "
      "the kernel lays it out, linked from sys/bus/pci/devices/<bus id>; "
      "proc/driver/nvidia-caps/mig-minors; and the /dev/nvidia* and "
      "/dev/nvidia-caps/nvidia-cap* nodes: character devices (195:<minor>, "
      "nvidiactl 195:255, nvidia-modeset 195:254, nvidia-uvm 120:0, "
      "nvidia-uvm-tools 120:1, nvidia-cap<N> 121:N) or empty files.");
  rootfs->add_option("--machine", machine_path, "Machine YAML file")
      ->required();
  rootfs->add_option("--out", out_dir, "Directory to write the fixture into")
      ->required();
  rootfs
      ->add_option("--device-nodes", device_nodes,
                   "char: character devices (fails unless mknod is "
                   "allowed); files: empty regular files; auto: character "
                   "devices when run as root and mknod is allowed, else "
                   "files")
      ->check(CLI::IsMember({"auto", "char", "files"}))
      ->capture_default_str();

  CLI11_PARSE(app, argc, argv);

  const absl::StatusOr<gdp::fake_nvml::Machine> machine =
      gdp::fake_nvml::LoadMachineFile(machine_path);
  if (!machine.ok()) {
    std::fprintf(stderr, "fake-nvml: %s\n",
                 std::string(machine.status().message()).c_str());
    return 1;
  }
  using gdp::fake_nvml::DeviceNodes;
  const bool character =
      device_nodes == "char" || (device_nodes == "auto" && geteuid() == 0);
  absl::Status written = gdp::fake_nvml::WriteRootfs(
      *machine, out_dir,
      character ? DeviceNodes::kCharacter : DeviceNodes::kFiles);
  if (!written.ok() && character && device_nodes == "auto") {
    // Root without CAP_MKNOD (e.g. in a user namespace): files will do.
    std::fprintf(stderr, "fake-nvml: %s; writing regular files instead\n",
                 std::string(written.message()).c_str());
    written =
        gdp::fake_nvml::WriteRootfs(*machine, out_dir, DeviceNodes::kFiles);
  }
  if (!written.ok()) {
    std::fprintf(stderr, "fake-nvml: %s\n",
                 std::string(written.message()).c_str());
    return 1;
  }
  return 0;
}
