// MIG instances made and destroyed at run time: the pure operations on a
// GPU's MIG layout behind nvmlDeviceCreateGpuInstance and its kin, and the
// MIG state file that makes one layout shared by every process loading the
// library or running `fake-nvml mig`. Shared by the library and the tool;
// see README.md, "MIG made at run time".
//
// The file holds the MIG mode (current and pending) and the GPU and compute
// instances of every MIG-capable GPU once anything changed them; until it
// exists, the machine file's layout is the layout. Writers take an
// exclusive flock on "<path>.lock", read the file, change it and replace it
// by rename, so readers need no lock and never see half a file.
#ifndef GDP_FAKE_NVML_MIG_STATE_H_
#define GDP_FAKE_NVML_MIG_STATE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fake_nvml/machine.h"
#include "nvml/nvml_api.h"

namespace gdp::fake_nvml {

// Bound of the MIG state file.
inline constexpr size_t kMaxMigStateFileBytes = 1 << 20;

// Rebuilds gpu->mig_devices from gpu->gpu_instances: one per compute
// instance, ordered by GPU instance ID, then compute instance ID (the
// instances are sorted so first).
void RebuildMigDevices(Gpu* gpu);

// The compute-slice starts a compute instance of `ci` may take inside a
// GPU instance of `gi`: the multiples of its size that fit, ascending.
std::vector<unsigned> ComputeInstanceStarts(const GiProfile& gi,
                                            const CiProfile& ci);

// How many more GPU instances of `profile` fit `gpu` now: free placements
// taken lowest first, within the profile's instance count and the GPU's
// compute slices. 0 unless MIG is enabled.
unsigned RemainingGpuInstances(const Gpu& gpu, const GiProfile& profile);

// How many more compute instances of `ci` fit `gi` now.
unsigned RemainingComputeInstances(const GpuInstance& gi, const CiProfile& ci);

// nvmlDeviceCreateGpuInstance(WithPlacement) on `gpu`: at `start` when
// given, else at the lowest free valid start. NOT_SUPPORTED unless MIG is
// enabled; INVALID_ARGUMENT for a start the profile does not allow;
// INSUFFICIENT_RESOURCES when the placement overlaps a GPU instance, the
// profile's instance count is reached or the compute slices are used up.
// On SUCCESS *id is the new instance's ID (GpuInstanceId of its placement).
nvmlReturn_t CreateGpuInstance(Gpu* gpu, const GiProfile& profile,
                               std::optional<unsigned> start, unsigned* id);

// nvmlGpuInstanceDestroy: IN_USE while it holds compute instances,
// NOT_FOUND when `gpu` has no GPU instance `id`.
nvmlReturn_t DestroyGpuInstance(Gpu* gpu, unsigned id);

// nvmlGpuInstanceCreateComputeInstance(WithPlacement) in GPU instance
// `gi_id` of `gpu`: at compute slice `start` when given (INVALID_ARGUMENT
// unless one of ComputeInstanceStarts), else the lowest free one;
// INSUFFICIENT_RESOURCES when it overlaps or nothing is free. The new ID is
// the lowest unused in the GPU instance. NOT_FOUND for no such GPU
// instance.
nvmlReturn_t CreateComputeInstance(Gpu* gpu, unsigned gi_id,
                                   const CiProfile& profile,
                                   std::optional<unsigned> start,
                                   unsigned* ci_id);

// nvmlComputeInstanceDestroy: IN_USE while it is marked busy, NOT_FOUND
// for no such instance.
nvmlReturn_t DestroyComputeInstance(Gpu* gpu, unsigned gi_id, unsigned ci_id);

// Marks compute instance `ci_id` of GPU instance `gi_id` busy (processes
// run on it) or idle. NOT_FOUND for no such instance.
nvmlReturn_t SetComputeInstanceBusy(Gpu* gpu, unsigned gi_id, unsigned ci_id,
                                    bool busy);

// nvmlDeviceSetMigMode: NOT_SUPPORTED for a GPU that cannot do MIG,
// INVALID_ARGUMENT for a mode other than ENABLE or DISABLE. Sets the
// pending mode, then activates it as the driver's own reset would:
// *activation is SUCCESS when the current mode now equals it, IN_USE
// (the mode stays pending until the GPU is idle and reset, or set again)
// while the GPU has GPU instances.
nvmlReturn_t SetMigMode(Gpu* gpu, unsigned mode, nvmlReturn_t* activation);

// A GPU reset: the pending MIG mode becomes current; when that changes the
// mode, every GPU and compute instance is gone.
void ResetMigMode(Gpu* gpu);

// Where the shared MIG state lives: `mig_state_env` ($FAKE_NVML_MIG_STATE)
// if not empty, else "mig-state" beside `control_env` ($FAKE_NVML_CONTROL)
// if that is not empty, else nullopt (the layout is the process's own).
std::optional<std::string> MigStatePath(absl::string_view mig_state_env,
                                        absl::string_view control_env);

// What a MIG state file was when read: changes whenever a writer replaced
// it (a new file each time).
struct MigStateStamp {
  bool exists = false;
  unsigned long long dev = 0, ino = 0, size = 0;
  long long mtime_ns = 0;
  friend bool operator==(const MigStateStamp&, const MigStateStamp&) = default;
};

// The stamp of the file at `path` now (exists false when it does not).
MigStateStamp StampMigState(const std::string& path);

// Applies the file at `path` to `machine`: each MIG-capable GPU the file
// names (by UUID) takes the file's modes and instances; GPUs it does not
// name, and every GPU when the file does not exist, keep theirs. Entries
// for UUIDs the machine lacks are ignored. DataLoss (naming the file and
// line) for a malformed or oversized file, or one naming a profile the GPU
// lacks; Internal for an I/O error. On error `machine` is unchanged.
absl::Status ReadMigState(const std::string& path, Machine* machine);

// Under the file's lock: reads it into *machine (ReadMigState), runs `op`,
// and when `op` answers SUCCESS writes every MIG-capable GPU's state back
// (a temporary file renamed over `path`). Result: `op`'s answer, or the
// file's error (nothing written).
absl::StatusOr<nvmlReturn_t> UpdateMigState(
    const std::string& path, Machine* machine,
    absl::FunctionRef<nvmlReturn_t(Machine&)> op);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_MIG_STATE_H_
