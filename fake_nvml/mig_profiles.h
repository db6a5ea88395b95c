// NVIDIA's published MIG profiles for the products the fake knows, and the
// pure functions the fake's MIG answers are derived from (placements,
// instance IDs, compute instance sub-profiles, MIG UUIDs).
//
// Figures per GPU instance profile (memory, SMs, engines) are those the
// driver lists with `nvidia-smi mig -lgip` for each product; placements are
// those of the MIG user guide (memory slices 0-7). See README.md.
#ifndef GDP_FAKE_NVML_MIG_PROFILES_H_
#define GDP_FAKE_NVML_MIG_PROFILES_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nvml/nvml_api.h"

namespace gdp::fake_nvml {

// Every product the fake knows has 7 compute slices and 8 memory slices.
inline constexpr unsigned kComputeSlices = 7;
inline constexpr unsigned kMemorySlices = 8;
// nvmlDeviceGetMaxMigDeviceCount of a GPU with MIG enabled; also the most
// GPU instances and compute instances one GPU can hold.
inline constexpr unsigned kMaxMigDevices = 7;
// GPU instance IDs are 0-14 (GpuInstanceId); compute instance IDs within a
// GPU instance 0-7.
inline constexpr unsigned kMaxGpuInstanceIds = 15;
inline constexpr unsigned kMaxComputeInstanceIds = 8;

// One GPU instance profile of a product.
struct GiProfile {
  unsigned profile;  // NVML_GPU_INSTANCE_PROFILE_* (the query index)
  unsigned id;       // profile ID (nvmlGpuInstanceProfileInfo_t.id)
  const char* name;  // NVIDIA's name, e.g. "1g.10gb" or "1g.10gb+me"
  unsigned slices;   // compute slices
  unsigned memory_slices;
  unsigned instance_count;  // how many fit one GPU
  unsigned multiprocessors;
  unsigned copy_engines;
  unsigned decoders;
  unsigned encoders;
  unsigned jpegs;
  unsigned ofas;
  unsigned long long memory_mib;
  uint8_t starts;  // bit s set: memory slice s is a valid placement start
};

// The MIG profiles of one product, matched by its NVML name. Static data:
// nothing is allocated, so nothing is left behind when the library is
// unloaded.
struct MigProduct {
  std::span<const char* const> names;
  std::span<const GiProfile> profiles;
};

// The product named `gpu_name` (nvmlDeviceGetName), or null if the fake has
// no MIG profiles for it.
const MigProduct* FindMigProduct(absl::string_view gpu_name);

// The names of every product FindMigProduct knows, comma-separated.
std::string KnownMigProducts();

// The profile of `product` queried as NVML_GPU_INSTANCE_PROFILE_* `profile`,
// by profile ID, or by NVIDIA's name; null when it has none.
const GiProfile* FindGiProfile(const MigProduct& product, unsigned profile);
const GiProfile* FindGiProfileById(const MigProduct& product, unsigned id);
const GiProfile* FindGiProfileByName(const MigProduct& product,
                                     absl::string_view name);

// The valid placement starts of `profile`, ascending.
std::vector<unsigned> PlacementStarts(const GiProfile& profile);

// The GPU instance ID the driver gives an instance of `memory_slices`
// memory slices placed at `start`: the instance's node in the binary tree
// of memory slices, numbered breadth first (8 slices: 0; 4 slices at 0 and
// 4: 1 and 2; 2 slices: 3-6; 1 slice: 7-14).
unsigned GpuInstanceId(unsigned start, unsigned memory_slices);

// A compute instance profile within a GPU instance of `gi`.
struct CiProfile {
  unsigned profile;  // NVML_COMPUTE_INSTANCE_PROFILE_*; also its profile ID
  unsigned slices;
  unsigned instance_count;  // gi.slices / slices
  unsigned multiprocessors;
  std::string name;  // "1c.3g.40gb", or the GPU instance's name when whole
};

// The compute instance profile NVML_COMPUTE_INSTANCE_PROFILE_* `profile`
// inside a GPU instance of `gi`: slice counts 1, 2, 3, 4 and 7 that fit it.
// nullopt for profiles it does not support (larger than the GPU instance,
// 6 or 8 slices, REV1, NVL).
std::optional<CiProfile> FindCiProfile(const GiProfile& gi, unsigned profile);

// The compute instance profile spanning all of a GPU instance of `gi`.
CiProfile WholeCiProfile(const GiProfile& gi);

// The compute instance profile inside `gi` named `name` ("1c.3g.40gb" or
// the GPU instance's own name).
std::optional<CiProfile> FindCiProfileByName(const GiProfile& gi,
                                             absl::string_view name);

// The names of every compute instance profile of `gi`, comma-separated.
std::string KnownCiProfiles(const GiProfile& gi);

// The MIG device UUID of compute instance `ci` in GPU instance `gi` of the
// GPU with UUID `gpu_uuid`: "MIG-" and a UUID in version-5 form, derived
// from the three by a fixed hash, so stable across runs and distinct per
// instance.
std::string MigUuid(absl::string_view gpu_uuid, unsigned gi, unsigned ci);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_MIG_PROFILES_H_
