// The fixture root the fake-nvml tool writes for tests and the demo: the
// files a device plugin reads besides NVML on a real node.
#ifndef GDP_FAKE_NVML_ROOTFS_H_
#define GDP_FAKE_NVML_ROOTFS_H_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fake_nvml/machine.h"

namespace gdp::fake_nvml {

// The directory of each GPU under sys/devices (in machine order), as the
// kernel lays it out: the root bus "pci<dddd>:<hb>" (the GPU's domain and
// its host_bridge as the bus number), a root port, for each PCIe switch of
// pcie_switches the switch's upstream port and the downstream port below it,
// then the GPU's own "<dddd:bb:dd.f>". Ports are named deterministically
// (real machines number theirs differently): the k-th port (from 0) opened
// below one directory is device 1 + k / 8, function k % 8 on that
// directory's bus, skipping the address of any device in the machine file;
// a switch's upstream port is "<dddd>:<up>:00.0", its downstream ports sit
// on bus <in>, and <up>, <in> are the two lowest bus numbers from 1 that no
// GPU, NVSwitch, host bridge or earlier switch (in machine order) of the
// domain uses. GPUs share a path prefix exactly as far as they share host
// bridge and switches. Result on failure: ResourceExhausted when a domain
// runs out of bus numbers for its switches.
absl::StatusOr<std::vector<std::string>> GpuDevicePaths(const Machine& machine);

// How WriteRootfs makes the /dev nodes.
enum class DeviceNodes {
  kFiles,      // empty regular files (anyone can write them)
  kCharacter,  // character devices with the numbers below (needs root:
               // CAP_MKNOD outside a user namespace)
};

// The device numbers of the character nodes. GPUs and the control and
// modeset nodes use the NVIDIA driver's fixed major 195; the driver gives
// nvidia-uvm and nvidia-caps dynamic majors, for which the fixture takes
// two of the kernel's "local/experimental use" majors (Documentation/
// admin-guide/devices.txt: 120-127), which no driver is ever given, so a
// container allowed these numbers reaches no real device.
inline constexpr unsigned kNvidiaMajor = 195;         // /dev/nvidia<minor>
inline constexpr unsigned kNvidiaCtlMinor = 255;      // /dev/nvidiactl
inline constexpr unsigned kNvidiaModesetMinor = 254;  // /dev/nvidia-modeset
inline constexpr unsigned kNvidiaUvmMajor = 120;      // nvidia-uvm 0, -tools 1
inline constexpr unsigned kNvidiaCapsMajor = 121;     // nvidia-cap<N>: minor N

// Creates under `root` (and its missing parents):
//   sys/devices/<GpuDevicePaths>/numa_node        each GPU's NUMA node and
//                                                 a newline
//   sys/devices/<GpuDevicePaths>/class            its PCI class as sysfs
//                                                 writes it: "0x030200\n"
//   sys/bus/pci/devices/<dddd:bb:dd.f>            a relative symbolic link to
//                                                 the GPU's directory,
//                                                 "../../../devices/<path>"
//                                                 (lower-case hex bus id,
//                                                 4-digit domain)
//   dev/nvidiactl, dev/nvidia-uvm, dev/nvidia-uvm-tools, dev/nvidia-modeset,
//   dev/nvidia<minor> per GPU                     device nodes (`nodes`)
//   proc/devices                                  the character device
//                                                 majors: nvidia-uvm 120,
//                                                 nvidia-caps 121,
//                                                 nvidia-frontend 195
//   proc/driver/nvidia-caps/mig-minors            the MIG capability minors
//                                                 as the driver lists them
//                                                 (see README.md): config,
//                                                 monitor, then every GPU
//                                                 (by minor), GPU instance
//                                                 ID 0-14 and compute
//                                                 instance ID 0-7, numbered
//                                                 by MigCapMinor
//   dev/nvidia-caps/nvidia-cap<N>                 device nodes for
//                                                 config (1) and monitor (2)
//                                                 when a GPU is MIG capable,
//                                                 and for each GPU and
//                                                 compute instance that
//                                                 exists
// Device nodes are `nodes`: empty regular files, or character devices
// (the numbers above: 195:<minor>, nvidiactl 195:255, nvidia-modeset
// 195:254, nvidia-uvm 120:0, nvidia-uvm-tools 120:1, nvidia-cap<N> 121:N),
// mode 0666 as the driver makes them.
// Existing files are overwritten, an existing device node replaced by the
// kind asked for, and an existing entry at a link's place (file, link or
// directory) replaced; nothing else is touched. Errors name the path that
// could not be written (for a character device, with mknod's error), or are
// GpuDevicePaths'.
absl::Status WriteRootfs(const Machine& machine,
                         const std::filesystem::path& root,
                         DeviceNodes nodes = DeviceNodes::kFiles);

// The capability minor N (/dev/nvidia-caps/nvidia-cap<N>) of GPU instance
// `gi` of the GPU with minor `gpu_minor`, or of its compute instance `ci`:
// numbered densely from 3 in the order of mig-minors (135 per GPU, 9 per
// GPU instance).
unsigned MigCapMinor(unsigned gpu_minor, unsigned gi,
                     std::optional<unsigned> ci = std::nullopt);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_ROOTFS_H_
