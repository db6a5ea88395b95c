// The fixture root the fake-nvml tool writes for tests and the demo: the
// files a device plugin reads besides NVML on a real node.
#ifndef GDP_FAKE_NVML_ROOTFS_H_
#define GDP_FAKE_NVML_ROOTFS_H_

#include <filesystem>

#include "absl/status/status.h"
#include "fake_nvml/machine.h"

namespace gdp::fake_nvml {

// Creates under `root` (and its missing parents):
//   sys/bus/pci/devices/<dddd:bb:dd.f>/numa_node  each GPU's NUMA node and
//                                                 a newline (lower-case hex
//                                                 bus id, 4-digit domain)
//   dev/nvidiactl, dev/nvidia-uvm, dev/nvidia-uvm-tools, dev/nvidia-modeset,
//   dev/nvidia<minor> per GPU                     empty regular files
// Existing files are overwritten; nothing else is touched. Errors name the
// path that could not be written.
absl::Status WriteRootfs(const Machine& machine,
                         const std::filesystem::path& root);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_ROOTFS_H_
