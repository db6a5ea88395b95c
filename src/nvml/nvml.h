// The one owner of NVML in the process. Made once in main and passed down by
// reference; nothing else loads or initialises NVML.
#ifndef GDP_NVML_NVML_H_
#define GDP_NVML_NVML_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nvml/deadline.h"
#include "nvml/nvml_api.h"

namespace gdp {

struct NvmlSymbols;  // resolved entry points, defined in nvml.cc

class Nvml;

// The GPU or compute instance ID an event carries when it is about none in
// particular (the whole GPU).
inline constexpr unsigned kNvmlAllInstances = 0xFFFFFFFF;

// One event from an NVML event set (nvmlEventData_t).
struct NvmlEvent {
  nvmlDevice_t device = nullptr;  // the GPU it is about
  unsigned long long type = 0;    // one nvmlEventType* bit
  unsigned long long data = 0;    // the XID for nvmlEventTypeXidCriticalError
  // The MIG GPU / compute instance the event is about; kNvmlAllInstances
  // when it names none (always so with a pre-R450 library).
  unsigned gpu_instance_id = kNvmlAllInstances;
  unsigned compute_instance_id = kNvmlAllInstances;

  // Every field alike: NVML's nvmlEventData_t carries no time, so two
  // events of a GPU alike in all of them cannot be told apart.
  bool operator==(const NvmlEvent&) const = default;
};

// An NVML event set (nvmlEventSetCreate), freed by the destructor. Made by
// Nvml::CreateEventSet; must not outlive that Nvml.
// Thread-safety: not thread-safe; one thread registers and waits.
class NvmlEventSet {
 public:
  // Calls nvmlEventSetFree (its error, if any, is dropped: there is nothing
  // left to do with the set).
  ~NvmlEventSet();
  NvmlEventSet(const NvmlEventSet&) = delete;
  NvmlEventSet& operator=(const NvmlEventSet&) = delete;

  // Records events of `types` (a mask of nvmlEventType*) of GPU `device`
  // from now on (nvmlDeviceRegisterEvents); calling it again for the same
  // GPU adds types. Result on failure: NVML's error, e.g. Unimplemented
  // (NVML_ERROR_NOT_SUPPORTED) when the GPU lacks one of the types, or
  // Unavailable (NVML_ERROR_GPU_IS_LOST).
  absl::Status Register(nvmlDevice_t device, unsigned long long types);

  // Waits up to `timeout` (rounded down to milliseconds, negative = 0) for
  // the next event and returns it. NVML cannot interrupt a wait: callers
  // that must stop promptly wait in short slices.
  // Result on failure: DeadlineExceeded (NVML_ERROR_TIMEOUT) when no event
  // came in time; any other NVML error when NVML itself failed.
  absl::StatusOr<NvmlEvent> Wait(absl::Duration timeout);

 private:
  friend class Nvml;
  NvmlEventSet(const Nvml& nvml, nvmlEventSet_t set) : nvml_(nvml), set_(set) {}

  const Nvml& nvml_;
  nvmlEventSet_t set_;
};

// PCI identity of a device as NVML reports it.
struct NvmlPci {
  unsigned domain = 0, bus = 0, device = 0;
  unsigned pci_device_id = 0;  // device id << 16 | vendor id
};

// The far end of an NVLink.
struct NvmlNvLinkPeer {
  NvmlPci pci;
  // GPU, SWITCH or IBMNPU; UNKNOWN when the driver cannot tell (then the
  // PCI address decides).
  nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
};

// nvmlDeviceGetRemappedRows: rows remapped after correctable and after
// uncorrectable memory errors, whether a remapping waits for a GPU reset,
// and whether a remapping failed.
struct NvmlRemappedRows {
  unsigned corrected = 0;
  unsigned uncorrectable = 0;
  bool pending = false;
  bool failure = false;
  bool operator==(const NvmlRemappedRows&) const = default;
};

// What NVML says of a GPU that a reset changes (nvmlDeviceGetFieldValues):
// the recovery action the driver asks for (NVML_GPU_RECOVERY_ACTION_*,
// R565 and later; NONE once the GPU is usable again) and the volatile ECC
// error counts (errors since the driver last loaded the GPU). Each is
// nullopt when the driver or the GPU cannot say.
struct NvmlResetMarkers {
  std::optional<unsigned> recovery_action;
  std::optional<unsigned long long> volatile_sbe;  // corrected (single-bit)
  std::optional<unsigned long long> volatile_dbe;  // uncorrectable
  bool operator==(const NvmlResetMarkers&) const = default;
};

// A GPU's PCIe link: current and maximum generation and width (lanes).
struct NvmlPcieLink {
  unsigned gen = 0, max_gen = 0;
  unsigned width = 0, max_width = 0;
  bool operator==(const NvmlPcieLink&) const = default;
};

// "No hard limit" in NVML's per-cgroup memory limits
// (NVML_DEVICE_MEMORY_LIMIT_MAX).
inline constexpr unsigned long long kNvmlMemoryLimitMax = ~0ull;

// A cgroup's GPU memory limits on one GPU (nvmlGetMemoryLimits_v1_t), in
// bytes: `soft` a reservation (0: none), `hard` the most its allocations
// may hold (kNvmlMemoryLimitMax: none), `used` what the cgroup holds now.
// The defaults are what NVML reports for a cgroup without limits.
struct NvmlMemoryLimits {
  unsigned long long soft = 0;
  unsigned long long hard = kNvmlMemoryLimitMax;
  unsigned long long used = 0;
  bool operator==(const NvmlMemoryLimits&) const = default;
};

class Nvml {
 public:
  // Loads libnvidia-ml.so.1 and calls nvmlInit_v2 once. With driver_root "/"
  // the dynamic linker's search path is used (as the NVIDIA container
  // toolkit arranges); otherwise the usual library directories under
  // driver_root are tried in order.
  // Result on failure: NotFound if no library could be loaded (the message
  // lists every path tried and the loader's reason), FailedPrecondition if
  // the library lacks a required symbol, and NVML's own error (see NvmlCode)
  // if nvmlInit_v2 fails.
  static absl::StatusOr<std::unique_ptr<Nvml>> Open(
      const std::string& driver_root);

  // Calls nvmlShutdown and unloads the library. Every handle obtained from
  // this object becomes invalid.
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // Path the library was loaded from (or its soname when found by search).
  const std::string& library_path() const { return library_path_; }

  // Deadlines (nvml/deadline.h). Calls made inside an NvmlRunner job get
  // `d` each (zero, the default: none). Set once, before any job runs.
  void set_call_deadline(absl::Duration d) { gate_.set_deadline(d); }
  // The calls hung now (past their deadline and not returned), oldest
  // first. Thread-safe.
  std::vector<NvmlHang> Hangs() const { return gate_.Hangs(); }
  // For NvmlRunner.
  NvmlCallGate& gate() const { return gate_; }

  // Thread-safety: NVML is thread-safe, and so are these. Each returns the
  // NVML error as a Status naming the call (see NvmlCode), and counts it
  // in gpu_device_plugin_nvml_errors_total{function,code} (as does a
  // failed nvmlInit_v2 in Open; an event wait's timeout is not counted).
  absl::StatusOr<std::string> DriverVersion() const;
  absl::StatusOr<int> CudaDriverVersion() const;  // e.g. 12040
  absl::StatusOr<unsigned> DeviceCount() const;
  absl::StatusOr<nvmlDevice_t> DeviceByIndex(unsigned index) const;
  absl::StatusOr<std::string> Name(nvmlDevice_t device) const;
  absl::StatusOr<std::string> Uuid(nvmlDevice_t device) const;
  absl::StatusOr<unsigned> MinorNumber(nvmlDevice_t device) const;
  absl::StatusOr<NvmlPci> PciInfo(nvmlDevice_t device) const;

  // Topology; each is optional in the library (Unimplemented with
  // NVML_ERROR_FUNCTION_NOT_FOUND when missing). NvLinkActive: Unimplemented
  // (NOT_SUPPORTED) on a GPU without NVLink, InvalidArgument past its last
  // link. NvLinkPeer: the device at the far end of `link`.
  absl::StatusOr<bool> NvLinkActive(nvmlDevice_t device, unsigned link) const;
  absl::StatusOr<NvmlNvLinkPeer> NvLinkPeer(nvmlDevice_t device,
                                            unsigned link) const;
  // The closest common PCIe ancestor of two different GPUs.
  absl::StatusOr<nvmlGpuTopologyLevel_t> CommonAncestor(nvmlDevice_t a,
                                                        nvmlDevice_t b) const;
  absl::StatusOr<unsigned long long> MemoryTotal(nvmlDevice_t device) const;
  // The product brand (nvmlDeviceGetBrand) and the simplified chip
  // architecture (nvmlDeviceGetArchitecture, an NVML_DEVICE_ARCH_* value or
  // one newer than this project knows). Both are optional in the library:
  // Unimplemented with NvmlCode NVML_ERROR_FUNCTION_NOT_FOUND when missing,
  // and Unimplemented (NVML_ERROR_NOT_SUPPORTED) when the GPU cannot say.
  absl::StatusOr<nvmlBrandType_t> Brand(nvmlDevice_t device) const;
  absl::StatusOr<nvmlDeviceArchitecture_t> Architecture(
      nvmlDevice_t device) const;
  absl::StatusOr<std::pair<int, int>> ComputeCapability(
      nvmlDevice_t device) const;
  // The handle of the GPU or MIG device with this UUID ("GPU-..",
  // "MIG-.."); NotFound (NVML_ERROR_NOT_FOUND) if there is none, Unavailable
  // (NVML_ERROR_GPU_IS_LOST) if the GPU fell off the bus.
  absl::StatusOr<nvmlDevice_t> DeviceByUuid(const std::string& uuid) const;

  // Health signals read by the health monitor's sweeps. Each entry point
  // is optional in the library: Unimplemented with NvmlCode
  // NVML_ERROR_FUNCTION_NOT_FOUND when missing, Unimplemented
  // (NVML_ERROR_NOT_SUPPORTED) when the GPU has no such thing (row
  // remapping before Ampere, retired pages pending from Ampere on).
  absl::StatusOr<NvmlRemappedRows> RemappedRows(nvmlDevice_t device) const;
  absl::StatusOr<bool> RetiredPagesPending(nvmlDevice_t device) const;
  // The four PCIe link calls; the first that fails decides the result.
  absl::StatusOr<NvmlPcieLink> PcieLink(nvmlDevice_t device) const;
  // A mask of nvmlClocksThrottleReason* bits.
  absl::StatusOr<unsigned long long> ThrottleReasons(nvmlDevice_t device) const;
  // The recovery action and volatile ECC counts, in one
  // nvmlDeviceGetFieldValues call. A field the driver or GPU cannot give
  // (its own return code, e.g. NOT_SUPPORTED) is nullopt; the call fails
  // as a whole when NVML does, or with NVML_ERROR_GPU_IS_LOST when any
  // field says the GPU is lost.
  absl::StatusOr<NvmlResetMarkers> ResetMarkers(nvmlDevice_t device) const;

  // Events (health monitoring).

  // The nvmlEventType* bits GPU `device` can report.
  absl::StatusOr<unsigned long long> SupportedEventTypes(
      nvmlDevice_t device) const;
  // A new, empty event set. Result on failure: NVML's error, or
  // Unimplemented (NVML_ERROR_FUNCTION_NOT_FOUND) when the library has no
  // event wait entry point.
  absl::StatusOr<std::unique_ptr<NvmlEventSet>> CreateEventSet() const;
  // Multi-Instance GPU. These entry points (R450 and later) are optional:
  // a library without one still loads, and a call needing it returns
  // Unimplemented with NvmlCode NVML_ERROR_FUNCTION_NOT_FOUND, naming the
  // entry point. MIG device handles are nvmlDevice_t too: Name, Uuid and
  // MemoryTotal accept them and describe the MIG device.

  // Whether the library has every MIG entry point.
  bool HasMig() const;

  // Current MIG mode; Unimplemented (NVML_ERROR_NOT_SUPPORTED) on GPUs
  // without MIG, and when the library lacks nvmlDeviceGetMigMode.
  absl::StatusOr<bool> MigEnabled(nvmlDevice_t device) const;
  // How many MIG devices GPU `gpu` can hold: the bound of the indexes to
  // try with MigDeviceByIndex (0 without MIG enabled). OutOfRange, naming
  // the count, for more than 64 (no GPU holds that many: a bad answer).
  absl::StatusOr<unsigned> MaxMigDeviceCount(nvmlDevice_t gpu) const;
  // The handle of MIG device `index` of GPU `gpu`; NotFound
  // (NVML_ERROR_NOT_FOUND) when there is none at that index (indexes may
  // have gaps).
  absl::StatusOr<nvmlDevice_t> MigDeviceByIndex(nvmlDevice_t gpu,
                                                unsigned index) const;
  // Whether `device` is a MIG device handle.
  absl::StatusOr<bool> IsMigDevice(nvmlDevice_t device) const;
  // The GPU a MIG device belongs to.
  absl::StatusOr<nvmlDevice_t> MigParent(nvmlDevice_t mig) const;
  // The GPU instance and compute instance IDs of a MIG device.
  absl::StatusOr<unsigned> GpuInstanceId(nvmlDevice_t mig) const;
  absl::StatusOr<unsigned> ComputeInstanceId(nvmlDevice_t mig) const;
  // What a MIG device is made of: SMs, shared engines, GPU and compute
  // instance slice counts, memory (nvmlDeviceGetAttributes_v2; MIG device
  // handles only).
  absl::StatusOr<nvmlDeviceAttributes_t> Attributes(nvmlDevice_t mig) const;
  // GPU instance `id` of GPU `gpu` (NotFound if none), and its information.
  absl::StatusOr<nvmlGpuInstance_t> GpuInstanceById(nvmlDevice_t gpu,
                                                    unsigned id) const;
  absl::StatusOr<nvmlGpuInstanceInfo_t> GpuInstanceInfo(
      nvmlGpuInstance_t gpu_instance) const;
  // GPU instance profile NVML_GPU_INSTANCE_PROFILE_* `profile` of GPU `gpu`:
  // Unimplemented (NVML_ERROR_NOT_SUPPORTED) if the GPU lacks it,
  // InvalidArgument past the profiles this NVML knows.
  absl::StatusOr<nvmlGpuInstanceProfileInfo_t> GpuInstanceProfileInfo(
      nvmlDevice_t gpu, unsigned profile) const;

  // Making MIG on demand (dynamic MIG). These entry points are optional
  // too: without one, the call needing it is Unimplemented with NvmlCode
  // NVML_ERROR_FUNCTION_NOT_FOUND. Every error keeps NVML's code (NvmlCode),
  // so callers tell an occupied placement (INSUFFICIENT_RESOURCES ->
  // ResourceExhausted) from an instance in use (IN_USE) and from one that
  // is gone (NOT_FOUND). The makers need root (NO_PERMISSION ->
  // PermissionDenied otherwise); messages name the GPU instance, compute
  // instance or profile concerned.

  // True when the library has every entry point below.
  bool HasMigMaking() const;

  // Every placement GPU instance profile ID `profile_id` (the `id` of
  // GpuInstanceProfileInfo) may take on GPU `gpu`, free or not, MIG mode on
  // or off (nvmlDeviceGetGpuInstancePossiblePlacements_v2), in NVML's
  // order. Unimplemented (NOT_SUPPORTED) for a GPU without MIG or a profile
  // it lacks.
  absl::StatusOr<std::vector<nvmlGpuInstancePlacement_t>>
  GpuInstancePossiblePlacements(nvmlDevice_t gpu, unsigned profile_id) const;

  // Creates a GPU instance of profile ID `profile_id` at `placement`
  // (nvmlDeviceCreateGpuInstanceWithPlacement) and returns its GPU instance
  // ID. ResourceExhausted (INSUFFICIENT_RESOURCES) when the placement
  // overlaps a GPU instance or the GPU has no room for it,
  // InvalidArgument for a placement the profile cannot take, Unimplemented
  // (NOT_SUPPORTED) when MIG mode is off. An instance made whose ID cannot
  // be read is destroyed again (the error says whether that failed too).
  absl::StatusOr<unsigned> CreateGpuInstance(
      nvmlDevice_t gpu, unsigned profile_id,
      nvmlGpuInstancePlacement_t placement) const;

  // Creates a compute instance of compute instance profile ID
  // `ci_profile_id` (nvmlComputeInstanceProfileInfo_t.id; the
  // NVML_COMPUTE_INSTANCE_PROFILE_* index it was read with, on every
  // driver NVIDIA documents) in GPU instance `gi_id` of `gpu`
  // (nvmlGpuInstanceCreateComputeInstance) and returns its compute
  // instance ID. NotFound (NOT_FOUND) when `gpu` has no GPU instance
  // `gi_id`; ResourceExhausted when the GPU instance is full; Unimplemented
  // (NOT_SUPPORTED) for a profile the GPU instance lacks. An instance made
  // whose ID cannot be read is destroyed again, as above.
  absl::StatusOr<unsigned> CreateComputeInstance(nvmlDevice_t gpu,
                                                 unsigned gi_id,
                                                 unsigned ci_profile_id) const;

  // Destroys compute instance `ci_id` of GPU instance `gi_id`
  // (nvmlComputeInstanceDestroy). NotFound when either is missing (an
  // instance already destroyed), FailedPrecondition (IN_USE) while
  // processes run on it.
  absl::Status DestroyComputeInstance(nvmlDevice_t gpu, unsigned gi_id,
                                      unsigned ci_id) const;

  // Destroys GPU instance `gi_id` of `gpu` (nvmlGpuInstanceDestroy).
  // NotFound when it is missing, FailedPrecondition (IN_USE) while it holds
  // compute instances.
  absl::Status DestroyGpuInstance(nvmlDevice_t gpu, unsigned gi_id) const;

  // One GPU instance as NVML reports it.
  struct GpuInstanceState {
    unsigned gi_id = 0;
    unsigned profile_id = 0;  // GPU instance profile ID
    nvmlGpuInstancePlacement_t placement{};
    std::vector<unsigned> ci_ids;  // its compute instances' IDs, ascending
  };

  // Every GPU instance of every profile on `gpu`, sorted by placement start
  // (then GPU instance ID), with its compute instances. Empty when MIG mode
  // is on and nothing is made; Unimplemented (NOT_SUPPORTED) when MIG mode
  // is off or the GPU has no MIG. An instance another process destroys
  // while the list is read is left out (its handle no longer valid).
  absl::StatusOr<std::vector<GpuInstanceState>> GpuInstances(
      nvmlDevice_t gpu) const;

  // Per-cgroup GPU memory limits (R615 / CUDA 13.4 and later), enforced by
  // the driver for every allocation made from inside the cgroup.

  // True when the library has both memory-limit entry points (R615+).
  bool HasMemoryLimits() const;
  // nvmlDeviceSetMemoryLimits_v1 on `cgroup_dir` (absolute path of a cgroup
  // v2 directory): `soft` and `hard` in bytes; soft 0 with hard
  // kNvmlMemoryLimitMax clears the cgroup's limits. GPU handles only.
  // Unimplemented (NVML_ERROR_FUNCTION_NOT_FOUND) when the library lacks
  // the symbol; otherwise NVML's code as the usual Status (see NvmlCode),
  // e.g. PermissionDenied (NO_PERMISSION) unless root, Unimplemented
  // (NOT_SUPPORTED) for a MIG device or a driver that cannot, and
  // InvalidArgument for a bad device, cgroup or limits. The message names
  // the cgroup.
  absl::Status SetMemoryLimits(nvmlDevice_t device,
                               const std::string& cgroup_dir,
                               unsigned long long soft,
                               unsigned long long hard) const;
  // nvmlDeviceGetMemoryLimits_v1: the limits of `cgroup_dir` on `device`
  // (soft 0 and hard kNvmlMemoryLimitMax where none is set) and the memory
  // it uses. Errors as SetMemoryLimits, less the privilege.
  absl::StatusOr<NvmlMemoryLimits> GetMemoryLimits(
      nvmlDevice_t device, const std::string& cgroup_dir) const;

 private:
  friend class NvmlEventSet;
  Nvml(void* lib, std::string path, std::unique_ptr<NvmlSymbols> fns);
  absl::Status Check(nvmlReturn_t r, const char* call) const;
  // Check(f(), call) when the gate lets the call through (see
  // NvmlCallGate::Enter: `a` and `b` are the handles it takes), else the
  // gate's error.
  template <typename F>
  absl::Status Guarded(const char* call, nvmlDevice_t a, nvmlDevice_t b, F&& f,
                       absl::Duration extra = absl::ZeroDuration()) const;
  // Guarded(call, handle, fn(handle, args...)), or Unimplemented when the
  // optional entry point `fn` was not found.
  template <typename Fn, typename Handle, typename... Args>
  absl::Status CallOptional(Fn fn, const char* call, Handle handle,
                            Args... args) const;
  // The IDs of every compute instance of GPU instance `gi`, ascending.
  absl::StatusOr<std::vector<unsigned>> ComputeInstanceIds(
      nvmlGpuInstance_t gi) const;
  // Reads a device string attribute into a buffer of NVML's documented size.
  absl::StatusOr<std::string> DeviceString(Fn_nvmlDeviceGetName fn,
                                           nvmlDevice_t device, unsigned size,
                                           const char* call) const;

  void* lib_;
  std::string library_path_;
  std::unique_ptr<NvmlSymbols> fns_;
  mutable NvmlCallGate gate_;
};

// The NVML return code a Status from Nvml carries, NVML_SUCCESS for OK, and
// NVML_ERROR_UNKNOWN for a Status that did not come from NVML.
nvmlReturn_t NvmlCode(const absl::Status& status);

}  // namespace gdp

#endif  // GDP_NVML_NVML_H_
