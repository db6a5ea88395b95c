// What discovery learns about the node's GPUs, independent of Kubernetes.
#ifndef GDP_DEVICE_GPU_H_
#define GDP_DEVICE_GPU_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "device/mig_profiles.h"
#include "nvml/nvml_api.h"

namespace gdp {

class Nvml;

// One MIG device: a compute instance inside a GPU instance.
struct MigInfo {
  unsigned index = 0;   // j of nvmlDeviceGetMigDeviceHandleByIndex(gpu, j)
  std::string uuid;     // "MIG-..."
  std::string profile;  // NVIDIA's name: "1g.10gb", or "1c.2g.20gb" when the
                        // compute instance is smaller than its GPU instance
  unsigned gi = 0;      // GPU instance ID
  unsigned ci = 0;      // compute instance ID
  // The GPU instance's profile ID (nvmlGpuInstanceInfo_t.profileId, what
  // nvmlDeviceCreateGpuInstance takes: 19 for 1g.10gb on an H100) and its
  // placement: memory slices [placement_start, placement_start +
  // placement_size).
  unsigned gi_profile_id = 0;
  unsigned placement_start = 0, placement_size = 0;
  uint64_t memory_bytes = 0;
  unsigned gi_slices = 0, ci_slices = 0;
  unsigned multiprocessors = 0;
  unsigned copy_engines = 0, decoders = 0, encoders = 0, jpegs = 0, ofas = 0;
};

struct GpuInfo {
  unsigned index = 0;  // NVML index
  std::string uuid;    // "GPU-..."
  std::string name;    // product name, e.g. "NVIDIA A100-SXM4-80GB"
  // As NVIDIA's go-nvlib names them (BrandName, ArchitectureName), e.g.
  // "Nvidia" / "Tesla" and "Ampere" / "Ada Lovelace"; "Unknown" when the
  // driver lacks the query or the GPU cannot answer it.
  std::string brand;
  std::string architecture;
  unsigned minor = 0;  // N in /dev/nvidiaN
  uint64_t memory_bytes = 0;
  std::string pci_bus_id;  // sysfs form, lower case: "0000:07:00.0"
  int numa_node = -1;      // -1: unknown
  // The PCIe root complex above the GPU, e.g. "pci0000:00" (ReadPcieRoot);
  // empty when sysfs does not show it.
  std::string pcie_root;
  int cc_major = 0, cc_minor = 0;
  bool mig_capable = false;
  bool mig_enabled = false;
  std::vector<MigInfo> migs;  // when mig_enabled, ordered by index
  // Dynamic MIG: the profiles and placements this GPU can be partitioned
  // into on demand. Filled only when DiscoverOptions::mig_profiles asks for
  // it and the GPU has MIG enabled; empty otherwise.
  std::vector<MigProfilePlacements> mig_profiles;
};

// What DiscoverGpus reads beyond what every caller needs.
struct DiscoverOptions {
  // Read each MIG-enabled GPU's profiles and placements into
  // GpuInfo::mig_profiles (ReadMigProfiles): for dynamic MIG. A GPU whose
  // profiles NVML cannot read is left out, as for its MIG devices.
  bool mig_profiles = false;
};

// A GPU or MIG device that discovery left out: its slot and why.
struct LeftOut {
  unsigned gpu = 0;             // the GPU's NVML index
  std::optional<unsigned> mig;  // the MIG device's index on it; none: the GPU
  // NVML's error, its message naming the slot ("GPU 3: ...",
  // "GPU 0 MIG 2: ...").
  absl::Status error;
};

struct NodeGpus {
  std::string driver_version;     // e.g. "550.54.15"
  int cuda_driver_version = 0;    // e.g. 12040 for CUDA 12.4
  std::vector<GpuInfo> gpus;      // usable GPUs, ordered by index
  std::vector<LeftOut> unusable;  // one per GPU or MIG device left out
};

// Enumerates every GPU through `nvml`, reading each GPU's NUMA node from
// <sysfs_root>/bus/pci/devices/<bus id>/numa_node (missing file or -1 means
// unknown) and its PCIe root from where that entry links to (ReadPcieRoot),
// and the MIG devices of each GPU with MIG enabled. Brand and architecture
// are "Unknown" when the library lacks their entry points or answers
// NVML_ERROR_NOT_SUPPORTED; a GPU is never left out for them. A GPU that
// NVML cannot describe (e.g. fallen off the bus), or whose MIG devices it
// cannot enumerate, is left out and its error, naming its index, added to
// `unusable`, so the others are still served; so is a single MIG device
// NVML cannot describe (its GPU and the other MIG devices stay). A GPU of
// `known` (an earlier discovery with the same sysfs_root) found again with
// the same UUID and PCI bus ID keeps its NUMA node and PCIe root, unread:
// they belong to its slot, and reading them is most of a rediscovery's
// cost. `options` says what else to read (DiscoverOptions). Result on
// failure: a node-wide NVML error (driver version, device count).
absl::StatusOr<NodeGpus> DiscoverGpus(const Nvml& nvml,
                                      const std::string& sysfs_root,
                                      const NodeGpus* known = nullptr,
                                      const DiscoverOptions& options = {});

// NVIDIA's name of a MIG profile, as NVIDIA's go-nvlib forms it:
// "<gi_slices>g.<gb>gb", with "<ci_slices>c." in front when the compute
// instance is smaller than its GPU instance, and `suffix` ("+me", "-me",
// "+me.all", "+gfx" or "") after. <gb> is the MIG device's memory
// (`mig_memory_mib`) as a fraction of the GPU's (`gpu_memory_bytes`),
// rounded up to eighths, times the GPU's memory in GiB rounded up, rounded
// to the nearest integer: an H100 80GB's 1g instance (9984 of 81559 MiB) is
// "1g.10gb".
std::string MigProfileName(unsigned gi_slices, unsigned ci_slices,
                           uint64_t gpu_memory_bytes, uint64_t mig_memory_mib,
                           const std::string& suffix = "");

// The suffix NVIDIA appends to profile names for GPU instance profile
// NVML_GPU_INSTANCE_PROFILE_* `profile`: "+me" (REV1), "+me.all" (ALL_ME),
// "-me" (NO_ME), "+gfx" (GFX), else "".
std::string MigProfileSuffix(unsigned profile);

// NVIDIA's go-nvlib name of a brand (GetBrandAsString): "Unknown", "Quadro",
// "Tesla", "NVS", "Grid", "GeForce", "Titan", "NvidiaVApps", "NvidiaVPC",
// "NvidiaVCS", "NvidiaVWS", "NvidiaCloudGaming", "QuadroRTX", "NvidiaRTX",
// "Nvidia", "GeForceRTX" or "TitanRTX"; "Unknown" for any other value.
std::string BrandName(nvmlBrandType_t brand);

// NVIDIA's go-nvlib name of an architecture (GetArchitectureAsString):
// "Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace",
// "Hopper", "Blackwell"; "Orin" for NVML_DEVICE_ARCH_T23X; "Unknown" for
// NVML_DEVICE_ARCH_UNKNOWN and any value newer than this project knows.
std::string ArchitectureName(nvmlDeviceArchitecture_t architecture);

// Reads a NUMA node file; -1 when absent, unreadable or not a number.
int ReadNumaNode(const std::string& sysfs_root, const std::string& bus_id);

}  // namespace gdp

#endif  // GDP_DEVICE_GPU_H_
