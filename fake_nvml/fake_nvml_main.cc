// fake-nvml: helper tool for tests and the demo around the fake NVML.
//
//   fake-nvml rootfs --machine FILE --out DIR
//
// writes the fixture root described in rootfs.h for the machine in FILE.
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
  CLI::App* rootfs = app.add_subcommand(
      "rootfs",
      "Write a fixture root for a machine: each GPU's sysfs directory "
      "(numa_node, class) under sys/devices/pci<domain>:<host bridge>/... as "
      "the kernel lays it out, linked from sys/bus/pci/devices/<bus id>; "
      "proc/driver/nvidia-caps/mig-minors; and the /dev/nvidia* and "
      "/dev/nvidia-caps/nvidia-cap* nodes as empty files.");
  rootfs->add_option("--machine", machine_path, "Machine YAML file")
      ->required();
  rootfs->add_option("--out", out_dir, "Directory to write the fixture into")
      ->required();

  CLI11_PARSE(app, argc, argv);

  const absl::StatusOr<gdp::fake_nvml::Machine> machine =
      gdp::fake_nvml::LoadMachineFile(machine_path);
  if (!machine.ok()) {
    std::fprintf(stderr, "fake-nvml: %s\n",
                 std::string(machine.status().message()).c_str());
    return 1;
  }
  const absl::Status written = gdp::fake_nvml::WriteRootfs(*machine, out_dir);
  if (!written.ok()) {
    std::fprintf(stderr, "fake-nvml: %s\n",
                 std::string(written.message()).c_str());
    return 1;
  }
  return 0;
}
