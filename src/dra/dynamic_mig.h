// MIG made on demand (NVIDIA's DynamicMIG): what a dynamic MIG device of a
// claim makes (a GPU instance at a placement and its full compute
// instance), what was made (to find and destroy it again), and the MIG
// maker the preparer makes and destroys instances through (NVML in the
// daemon, a table in tests). No NVML types here: nvml_mig_maker.h is the
// NVML edge.
#ifndef GDP_DRA_DYNAMIC_MIG_H_
#define GDP_DRA_DYNAMIC_MIG_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gdp::dra {

// A profile placement on a GPU: the GPU instance of GPU instance profile ID
// `profile_id` (NVML_GPU_INSTANCE_PROFILE_*'s id, 19 for an H100's 1g.10gb)
// over memory slices [start, start + size), and the compute instance of
// profile `ci_profile_id` spanning it. The device named
// "gpu-<gpu_minor>-mig-<profile>-<profile_id>-<start>" makes it.
struct MigPlacement {
  std::string gpu_uuid;
  unsigned gpu_minor = 0;  // /dev/nvidia<minor>; the capability minors' key
  std::string profile;     // "1g.10gb", for messages
  unsigned profile_id = 0;
  unsigned ci_profile_id = 0;
  unsigned start = 0;
  unsigned size = 0;
  bool operator==(const MigPlacement&) const = default;
};

// "GPU <uuid> placement <profile> (profile ID <id>) at memory slices
// <start>-<end>" for messages.
std::string Describe(const MigPlacement& p);

// Whether two placements of one GPU share a memory slice.
bool Overlaps(const MigPlacement& a, const MigPlacement& b);

// A dynamic MIG device of a prepared claim: its placement and, once made,
// its GPU and compute instance IDs and the MIG device's UUID.
struct MigRecord {
  MigPlacement placement;
  std::optional<unsigned> gi_id;
  std::optional<unsigned> ci_id;
  std::string uuid;  // "MIG-..."; empty until made
  bool operator==(const MigRecord&) const = default;
};

// One GPU instance as NVML reports it.
struct MigGpuInstance {
  unsigned gi_id = 0;
  unsigned profile_id = 0;
  unsigned start = 0, size = 0;  // memory slices
  std::vector<unsigned> ci_ids;  // its compute instances
  bool operator==(const MigGpuInstance&) const = default;
};

// Makes and destroys MIG instances. Thread-safe. Every error keeps its
// code: ResourceExhausted for an occupied placement or a full GPU,
// NotFound for an instance that is not there, FailedPrecondition for one in
// use; messages name the GPU and instance.
class MigMaker {
 public:
  virtual ~MigMaker() = default;
  // Every GPU instance of GPU `gpu_uuid` (empty when none is made).
  virtual absl::StatusOr<std::vector<MigGpuInstance>> List(
      const std::string& gpu_uuid) = 0;
  // Makes the GPU instance of `p` at its placement; its GPU instance ID.
  virtual absl::StatusOr<unsigned> CreateGpuInstance(const MigPlacement& p) = 0;
  // Makes the compute instance of `p` in GPU instance `gi_id`; its ID.
  virtual absl::StatusOr<unsigned> CreateComputeInstance(const MigPlacement& p,
                                                         unsigned gi_id) = 0;
  // The UUID of the MIG device of compute instance `ci_id` of GPU instance
  // `gi_id` of GPU `gpu_uuid`; NotFound when there is none.
  virtual absl::StatusOr<std::string> MigUuid(const std::string& gpu_uuid,
                                              unsigned gi_id,
                                              unsigned ci_id) = 0;
  virtual absl::Status DestroyComputeInstance(const std::string& gpu_uuid,
                                              unsigned gi_id,
                                              unsigned ci_id) = 0;
  virtual absl::Status DestroyGpuInstance(const std::string& gpu_uuid,
                                          unsigned gi_id) = 0;
};

// Where the preparer stands in making or destroying a claim's instances,
// for tests that stop it there (a kill -9 at that step): after the intent
// is recorded, after each GPU instance and compute instance is made,
// after the spec is written, after the claim is recorded prepared; and on
// unprepare after it is recorded as being unprepared, after each compute
// instance and GPU instance is destroyed.
enum class MigStep {
  kIntentRecorded,
  kGpuInstanceMade,
  kComputeInstanceMade,
  kSpecWritten,
  kPreparedRecorded,
  kUnprepareRecorded,
  kComputeInstanceDestroyed,
  kGpuInstanceDestroyed,
};

// "intent-recorded", "gi-made", "ci-made", "spec-written",
// "prepared-recorded", "unprepare-recorded", "ci-destroyed",
// "gi-destroyed".
const char* MigStepName(MigStep step);

// Makes the instances of `record` (its GPU instance, then its compute
// instance, then reads the MIG device's UUID), filling its IDs and UUID.
// First lists the GPU's instances: a GPU instance overlapping the
// placement fails it with FailedPrecondition naming that instance (made by
// someone else: nothing is destroyed), and so does a GPU not in MIG mode
// (the list is Unimplemented), saying so (MIG mode is never changed here).
// `on_step` (may be empty) runs after each instance is made. On failure what
// this call made is destroyed again (best effort) and the record is as it
// came; `*may_remain` (may be null) is then set true when an instance of
// the placement may be left on the GPU: its creation was given up
// (DeadlineExceeded or Cancelled: NVML may still make it) or destroying
// what was made failed. The caller must then keep the intent and destroy
// by placement (DestroyMig), or an instance of its own would be left that
// no record names.
absl::Status MakeMig(MigMaker& maker, MigRecord& record,
                     const std::function<void(MigStep)>& on_step,
                     bool* may_remain = nullptr);

// Destroys what `record` names: the GPU instance at its placement (of its
// profile) and every compute instance in it, looked up by placement, not by
// the recorded IDs (after a crash they may not have been recorded yet). A
// placement with nothing there is success. `on_step` runs after each
// destruction. Result on failure: the first destroy that failed (e.g.
// FailedPrecondition while processes run on it), naming the placement.
absl::Status DestroyMig(MigMaker& maker, const MigRecord& record,
                        const std::function<void(MigStep)>& on_step);

}  // namespace gdp::dra

#endif  // GDP_DRA_DYNAMIC_MIG_H_
