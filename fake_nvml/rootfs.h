// The fixture root the fake-nvml tool writes for tests and the demo: the
// files a device plugin reads besides NVML on a real node.
#ifndef GDP_FAKE_NVML_ROOTFS_H_
#define GDP_FAKE_NVML_ROOTFS_H_

#include <filesystem>
#include <optional>

#include "absl/status/status.h"
#include "fake_nvml/machine.h"

namespace gdp::fake_nvml {

// Creates under `root` (and its missing parents):
//   sys/bus/pci/devices/<dddd:bb:dd.f>/numa_node  each GPU's NUMA node and
//                                                 a newline (lower-case hex
//                                                 bus id, 4-digit domain)
//   sys/bus/pci/devices/<dddd:bb:dd.f>/class      its PCI class as sysfs
//                                                 writes it: "0x030200\n"
//   dev/nvidiactl, dev/nvidia-uvm, dev/nvidia-uvm-tools, dev/nvidia-modeset,
//   dev/nvidia<minor> per GPU                     empty regular files
//   proc/driver/nvidia-caps/mig-minors            the MIG capability minors
//                                                 as the driver lists them
//                                                 (see README.md): config,
//                                                 monitor, then every GPU
//                                                 (by minor), GPU instance
//                                                 ID 0-14 and compute
//                                                 instance ID 0-7, numbered
//                                                 by MigCapMinor
//   dev/nvidia-caps/nvidia-cap<N>                 empty regular files for
//                                                 config (1) and monitor (2)
//                                                 when a GPU is MIG capable,
//                                                 and for each GPU and
//                                                 compute instance that
//                                                 exists
// Existing files are overwritten; nothing else is touched. Errors name the
// path that could not be written.
absl::Status WriteRootfs(const Machine& machine,
                         const std::filesystem::path& root);

// The capability minor N (/dev/nvidia-caps/nvidia-cap<N>) of GPU instance
// `gi` of the GPU with minor `gpu_minor`, or of its compute instance `ci`:
// numbered densely from 3 in the order of mig-minors (135 per GPU, 9 per
// GPU instance).
unsigned MigCapMinor(unsigned gpu_minor, unsigned gi,
                     std::optional<unsigned> ci = std::nullopt);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_ROOTFS_H_
