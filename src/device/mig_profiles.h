// The MIG profiles a GPU can be partitioned into on demand and every
// placement of each: the device model of dynamic MIG (partitionable devices,
// KEP-4815), read through NVML. Plain data; what the DRA side publishes per
// profile placement, and the per-GPU counters it consumes from, are derived
// from it as NVIDIA's DRA driver derives them (MigGpuCounters below).
#ifndef GDP_DEVICE_MIG_PROFILES_H_
#define GDP_DEVICE_MIG_PROFILES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nvml/nvml_api.h"

namespace gdp {

class Nvml;

// One GPU instance profile of a GPU whose compute instance spans the whole
// GPU instance (NVIDIA's dynamic MIG offers only those), with every
// placement NVML allows for it.
struct MigProfilePlacements {
  // The NVML_GPU_INSTANCE_PROFILE_* index it was read with (decides the
  // name's suffix: "+me" for *_REV1, ...).
  unsigned profile = 0;
  // The GPU instance profile ID (nvmlGpuInstanceProfileInfo_t.id): what
  // Nvml::CreateGpuInstance takes and what NVIDIA's device name carries
  // (gpu-<minor>-mig-<name without dots>-<profile_id>-<placement start>).
  unsigned profile_id = 0;
  // The compute instance profile ID of the compute instance spanning the
  // whole GPU instance, for Nvml::CreateComputeInstance: the
  // NVML_COMPUTE_INSTANCE_PROFILE_* of `slice_count` slices (never *_REV1
  // or *_NVL), whose ID is that index (as NVIDIA's driver relies on).
  unsigned ci_profile_id = 0;
  // NVIDIA's profile name (MigProfileName in device/gpu.h), e.g. "1g.10gb",
  // "1g.10gb+me", "7g.80gb": the "profile" attribute.
  std::string name;
  unsigned slice_count = 0;  // compute slices (the "<n>g" of the name)
  // The capacities NVIDIA publishes per MIG device (its
  // CommonCapacitiesMig): memory in MiB (published in bytes as "memory"),
  // "multiprocessors", "copyEngines", "decoders", "encoders",
  // "jpegEngines", "ofaEngines".
  uint64_t memory_mib = 0;
  unsigned multiprocessors = 0;
  unsigned copy_engines = 0;
  unsigned decoders = 0;
  unsigned encoders = 0;
  unsigned jpegs = 0;
  unsigned ofas = 0;
  // Every placement NVML allows (GpuInstancePossiblePlacements, in its
  // order), free or not. A placement covers memory slices [start, start +
  // size): a device at it consumes counters memory-slice-<start> ..
  // memory-slice-<start + size - 1>, each 1.
  std::vector<nvmlGpuInstancePlacement_t> placements;

  bool operator==(const MigProfilePlacements& o) const;
};

// Reads the MIG profiles of MIG-capable GPU `gpu`: each GPU instance profile
// the GPU has (NVML_GPU_INSTANCE_PROFILE_* ascending, each profile ID once)
// with its placements, as NVIDIA's DRA driver walks them (go-nvlib's
// VisitMigProfiles: profiles the GPU answers NOT_SUPPORTED or
// INVALID_ARGUMENT for are skipped, and so are profiles without
// placements). The names are formed from the GPU's total memory
// (MemoryTotal). Works with MIG mode on or off. Result on failure: NVML's
// error (naming the profile), e.g. Unimplemented for a GPU without MIG;
// OutOfRange naming the profile and placement for a placement of size 0 or
// reaching past 32 memory slices.
absl::StatusOr<std::vector<MigProfilePlacements>> ReadMigProfiles(
    const Nvml& nvml, nvmlDevice_t gpu);

// The counters of a GPU's counter set as NVIDIA derives them from its
// profiles: the largest value of each capacity across every profile (in
// practice the whole-GPU profile's), and the number of memory slices (the
// largest placement size, as NVIDIA assumes the largest profile covers all
// of them). The full GPU consumes all of it; each placement consumes its
// profile's capacities and its memory slices.
struct MigGpuCounters {
  uint64_t memory_mib = 0;
  unsigned multiprocessors = 0;
  unsigned copy_engines = 0;
  unsigned decoders = 0;
  unsigned encoders = 0;
  unsigned jpegs = 0;
  unsigned ofas = 0;
  unsigned memory_slices = 0;
  bool operator==(const MigGpuCounters&) const = default;
};

// The counters of a GPU with these profiles (all zero for none).
MigGpuCounters GpuCounters(const std::vector<MigProfilePlacements>& profiles);

}  // namespace gdp

#endif  // GDP_DEVICE_MIG_PROFILES_H_
