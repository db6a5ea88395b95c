// The in-memory description of a fake machine: what a machine YAML file
// (see README.md) says about the driver, the GPUs and the NVSwitches, and the
// pure functions NVML answers are derived from (bus id strings, PCIe
// topology levels).
#ifndef GDP_FAKE_NVML_MACHINE_H_
#define GDP_FAKE_NVML_MACHINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "fake_nvml/mig_profiles.h"
#include "nvml/nvml_api.h"

namespace gdp::fake_nvml {

// Upper bound on GPUs per machine (handles are drawn from a fixed table).
inline constexpr unsigned kMaxGpus = 64;

// NVML's event types after nvmlEventTypeClock (nvml.h; nvml_api.h declares
// only those the plugin uses), with the driver branch that added them
// (NVML API reference, "Change Log"): nvmlEventTypePowerSourceChange,
// nvmlEventMigConfigChange (R450, with MIG), then R560's
// nvmlEventTypeSingleBitEccErrorStorm, nvmlEventTypeDramRetirementEvent,
// nvmlEventTypeDramRetirementFailure, nvmlEventTypeNonFatalPoisonError and
// nvmlEventTypeFatalPoisonError, then R565's
// nvmlEventTypeGpuUnavailableError and nvmlEventTypeGpuRecoveryAction.
inline constexpr unsigned long long kEventPowerSourceChange = 0x80;
inline constexpr unsigned long long kEventMigConfigChange = 0x100;
inline constexpr unsigned long long kEventSingleBitEccErrorStorm = 0x200;
inline constexpr unsigned long long kEventDramRetirementEvent = 0x400;
inline constexpr unsigned long long kEventDramRetirementFailure = 0x800;
inline constexpr unsigned long long kEventNonFatalPoisonError = 0x1000;
inline constexpr unsigned long long kEventFatalPoisonError = 0x2000;
inline constexpr unsigned long long kEventGpuUnavailableError = 0x4000;
inline constexpr unsigned long long kEventGpuRecoveryAction = 0x8000;

// The major version of a driver version string ("580.159.04" -> 580), 0
// when it does not start with a number.
unsigned DriverMajor(absl::string_view driver_version);

// The events a GPU reports unless its machine file says otherwise: every
// type a driver of `driver_version` knows (nvmlEventTypeAll, 0xFF9F, from
// R565 on: what an H100 reported with driver 580.159.04), MigConfigChange
// only for a MIG-capable GPU. Before R450: SBE, DBE, PState, XID, Clock and
// PowerSourceChange (0x9F); R450-R559 add MigConfigChange; R560-R564 the
// five R560 types.
unsigned long long DefaultSupportedEvents(absl::string_view driver_version,
                                          bool mig_capable);

// Whether a driver of `driver_version` knows GPU instance profile index
// `profile` (an NVML_GPU_INSTANCE_PROFILE_*): all below
// NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX (0x11), which came with R595 (NVML
// change log; driver 580.159.04 answers INVALID_ARGUMENT for it), and that
// one from R595 on.
bool KnowsGpuInstanceProfile(absl::string_view driver_version,
                             unsigned profile);

// A PCI function address, domain:bus:device.function.
struct PciAddress {
  uint32_t domain = 0;
  uint32_t bus = 0;
  uint32_t device = 0;
  uint32_t function = 0;

  friend bool operator==(const PciAddress&, const PciAddress&) = default;
};

// Parses "DOMAIN:BUS:DEVICE.FUNCTION" or "BUS:DEVICE.FUNCTION" (domain 0),
// hexadecimal in either case, with a domain of 1 to 8 digits. Returns
// nullopt for anything else or out-of-range parts (bus > 0xFF, device >
// 0x1F, function > 7).
std::optional<PciAddress> ParsePciAddress(absl::string_view text);

// NVML's busId form, "%08X:%02X:%02X.0" (e.g. "00000000:07:00.0").
std::string FormatBusId(const PciAddress& address);

// NVML's busIdLegacy form, "%04X:%02X:%02X.0" (e.g. "0000:07:00.0").
std::string FormatLegacyBusId(const PciAddress& address);

// The Linux sysfs name, lower-case "%04x:%02x:%02x.%x" ("0000:b7:00.0").
std::string FormatSysfsBusId(const PciAddress& address);

// Which kind of device the far end of an NVLink is.
enum class LinkPeer { kGpu, kNvSwitch };

// One NVLink of a GPU.
struct NvLink {
  bool active = true;
  LinkPeer peer_kind = LinkPeer::kGpu;
  // Index into Machine::gpus or Machine::nvswitches, per peer_kind.
  unsigned peer = 0;
};

// A compute instance inside a GPU instance: one MIG device.
struct ComputeInstance {
  CiProfile profile;
  unsigned id = 0;     // unique within its GPU instance
  unsigned start = 0;  // first compute slice within the GPU instance
  bool busy = false;   // processes run on it: destroying it is IN_USE
};

// A GPU instance of a MIG-enabled GPU.
struct GpuInstance {
  const GiProfile* profile = nullptr;  // static, from the product's table
  unsigned id = 0;                     // unique within the GPU
  unsigned start = 0;                  // first memory slice
  std::vector<ComputeInstance> compute_instances;  // ordered by id
};

// One MIG device, as nvmlDeviceGetMigDeviceHandleByIndex enumerates it.
struct MigDevice {
  unsigned gpu_instance = 0;      // index into Gpu::gpu_instances
  unsigned compute_instance = 0;  // index into its compute_instances
  std::string uuid;               // "MIG-..."
};

// nvmlDeviceGetRemappedRows (Ampere and later).
struct RemappedRows {
  unsigned corrected = 0;      // rows remapped after correctable errors
  unsigned uncorrectable = 0;  // rows remapped after uncorrectable errors
  bool pending = false;        // a remapping waits for a GPU reset
  bool failure = false;        // a remapping failed
  friend bool operator==(const RemappedRows&, const RemappedRows&) = default;
};

// A GPU's PCIe link (nvmlDeviceGet{Curr,Max}PcieLink{Generation,Width}).
struct PcieLink {
  unsigned gen = 4, max_gen = 4;
  unsigned width = 16, max_width = 16;
  friend bool operator==(const PcieLink&, const PcieLink&) = default;
};

// Whether a GPU of `architecture` remaps rows (Ampere and later, known
// ones only) rather than retiring pages.
bool RemapsRows(nvmlDeviceArchitecture_t architecture);

// Whether a driver of `driver_version` ("565.57.01") has NVML's GPU
// recovery action field (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, added in
// R565): a major version of 565 or more.
bool ReportsRecoveryAction(absl::string_view driver_version);

// The PCIe generation a GPU of `architecture` has by default: 3 up to
// Turing, 4 for Ampere and Ada, 5 from Hopper on (and for unknown ones).
unsigned DefaultPcieGeneration(nvmlDeviceArchitecture_t architecture);

// One GPU, as the machine file describes it.
struct Gpu {
  std::string name;
  std::string uuid;
  unsigned minor = 0;
  PciAddress pci;
  uint32_t pci_device_id = 0;     // device id << 16 | vendor id
  uint32_t pci_subsystem_id = 0;  // subsystem id << 16 | subsystem vendor
  // PCI class code (sysfs `class`): 0x030200 3D controller (compute mode),
  // 0x030000 VGA controller (graphics mode).
  uint32_t pci_class = 0x030200;
  unsigned long long memory_total_bytes = 0;
  unsigned long long memory_used_bytes = 0;
  int cc_major = 0;
  int cc_minor = 0;
  // nvmlDeviceGetBrand and nvmlDeviceGetArchitecture; the architecture
  // defaults to ArchitectureOf(cc_major, cc_minor).
  nvmlBrandType_t brand = NVML_BRAND_NVIDIA;
  nvmlDeviceArchitecture_t architecture = NVML_DEVICE_ARCH_UNKNOWN;
  int numa_node = -1;  // -1: the platform has no NUMA information
  // PCIe placement: GPUs on the same board are INTERNAL; otherwise the
  // PCIe switches (outermost first) under `host_bridge` decide the level.
  // A host bridge (0-255, its root bus number in the fixture's sysfs) is in
  // one PCI domain and one NUMA node.
  std::optional<unsigned> board;
  unsigned host_bridge = 0;
  std::vector<unsigned> pcie_switches;
  bool mig_capable = false;
  unsigned mig_current = NVML_DEVICE_MIG_DISABLE;
  unsigned mig_pending = NVML_DEVICE_MIG_DISABLE;
  // The product's MIG profiles, when the fake knows the product.
  const MigProduct* mig_product = nullptr;
  // Only with MIG enabled: the GPU instances, ordered by id, and the MIG
  // devices, one per compute instance, ordered by GPU instance id then
  // compute instance id (their NVML index).
  std::vector<GpuInstance> gpu_instances;
  std::vector<MigDevice> mig_devices;
  // nvmlDeviceGetSupportedEventTypes: the machine file's, else
  // DefaultSupportedEvents.
  unsigned long long supported_events = 0;
  std::vector<NvLink> nvlinks;
  // Health signals (README.md, "Health signals"). remapped_rows is set
  // exactly when RemapsRows(architecture).
  std::optional<RemappedRows> remapped_rows;
  bool retired_pages_pending = false;  // only without remapped_rows
  PcieLink pcie;
  // nvmlClocksThrottleReason*: an idle GPU reports GpuIdle, as a real one
  // without load does.
  unsigned long long throttle_reasons = nvmlClocksThrottleReasonGpuIdle;
};

// One NVSwitch, the peer of NVLinks on NVSwitch-based systems.
struct NvSwitch {
  PciAddress pci;
  uint32_t pci_device_id = 0;
};

// A whole machine.
struct Machine {
  std::string driver_version;
  int cuda_driver_version = 0;
  std::vector<Gpu> gpus;
  std::vector<NvSwitch> nvswitches;
};

// The closest common PCIe ancestor of two distinct GPUs: INTERNAL for the
// same board, SINGLE when both sit directly below the same PCIe switch,
// MULTIPLE when they share a switch higher up, HOSTBRIDGE for the same host
// bridge, NODE for the same NUMA node, SYSTEM otherwise.
nvmlGpuTopologyLevel_t CommonAncestor(const Gpu& a, const Gpu& b);

// The architecture of a GPU with CUDA compute capability major.minor: 3.x
// Kepler, 5.x Maxwell, 6.x Pascal, 7.0 and 7.2 Volta, 7.5 Turing, 8.0, 8.6
// and 8.7 Ampere, 8.9 Ada, 9.0 Hopper, 10.x and 12.x Blackwell, else
// NVML_DEVICE_ARCH_UNKNOWN.
nvmlDeviceArchitecture_t ArchitectureOf(int cc_major, int cc_minor);

// nvmlPciInfo_t for a PCI function: both bus id strings, domain, bus,
// device and the two ids.
nvmlPciInfo_t MakePciInfo(const PciAddress& address, uint32_t device_id,
                          uint32_t subsystem_id);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_MACHINE_H_
