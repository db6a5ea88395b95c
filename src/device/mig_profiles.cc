#include "device/mig_profiles.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "device/gpu.h"
#include "nvml/nvml.h"

namespace gdp {
namespace {

// The most memory slices a placement may reach: NVML's GPUs have 8, and
// each slice becomes a DRA counter (at most 32 a counter set), so a
// placement past this is a driver's bad answer, refused rather than
// trusted with a loop over its slices.
constexpr unsigned kMaxMemorySlices = 32;

// `s` with the profile it was about in front; NVML's code stays.
absl::Status ForProfile(unsigned profile, const absl::Status& s) {
  absl::Status out(
      s.code(), absl::StrCat("MIG profile ", profile,
                             " (NVML_GPU_INSTANCE_PROFILE_*): ", s.message()));
  s.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

// The NVML_COMPUTE_INSTANCE_PROFILE_* spanning a GPU instance of
// `slices` compute slices; nullopt for a slice count no compute instance
// profile has.
std::optional<unsigned> WholeComputeProfile(unsigned slices) {
  switch (slices) {
    case 1:
      return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2:
      return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3:
      return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4:
      return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    case 6:
      return NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE;
    case 7:
      return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
    case 8:
      return NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE;
    default:
      return std::nullopt;
  }
}

}  // namespace

bool MigProfilePlacements::operator==(const MigProfilePlacements& o) const {
  auto same_placements = [&] {
    if (placements.size() != o.placements.size()) return false;
    for (size_t i = 0; i < placements.size(); ++i) {
      if (placements[i].start != o.placements[i].start ||
          placements[i].size != o.placements[i].size) {
        return false;
      }
    }
    return true;
  };
  return profile == o.profile && profile_id == o.profile_id &&
         ci_profile_id == o.ci_profile_id && name == o.name &&
         slice_count == o.slice_count && memory_mib == o.memory_mib &&
         multiprocessors == o.multiprocessors &&
         copy_engines == o.copy_engines && decoders == o.decoders &&
         encoders == o.encoders && jpegs == o.jpegs && ofas == o.ofas &&
         same_placements();
}

absl::StatusOr<std::vector<MigProfilePlacements>> ReadMigProfiles(
    const Nvml& nvml, nvmlDevice_t gpu) {
  auto memory = nvml.MemoryTotal(gpu);
  if (!memory.ok()) return memory.status();
  std::vector<MigProfilePlacements> out;
  absl::Status none = absl::UnimplementedError(
      "no MIG profile with placements: the GPU cannot be partitioned");
  for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
    auto info = nvml.GpuInstanceProfileInfo(gpu, p);
    if (!info.ok()) {
      // A profile the GPU lacks, or one this driver does not know. A GPU
      // without MIG answers NOT_SUPPORTED for every profile: that answer is
      // the result when no profile is left.
      const nvmlReturn_t code = NvmlCode(info.status());
      if (code == NVML_ERROR_NOT_SUPPORTED) {
        none = info.status();
        continue;
      }
      if (code == NVML_ERROR_INVALID_ARGUMENT) continue;
      return ForProfile(p, info.status());
    }
    if (std::any_of(out.begin(), out.end(), [&](const auto& seen) {
          return seen.profile_id == info->id;
        })) {
      continue;
    }
    const std::optional<unsigned> ci = WholeComputeProfile(info->sliceCount);
    if (!ci.has_value()) continue;
    auto placements = nvml.GpuInstancePossiblePlacements(gpu, info->id);
    if (!placements.ok()) {
      const nvmlReturn_t code = NvmlCode(placements.status());
      if (code == NVML_ERROR_NOT_SUPPORTED ||
          code == NVML_ERROR_INVALID_ARGUMENT) {
        continue;
      }
      return ForProfile(p, placements.status());
    }
    if (placements->empty()) continue;
    for (const nvmlGpuInstancePlacement_t& pl : *placements) {
      if (pl.size == 0 || pl.size > kMaxMemorySlices ||
          pl.start > kMaxMemorySlices - pl.size) {
        return ForProfile(
            p, absl::OutOfRangeError(absl::StrCat(
                   "nvmlDeviceGetGpuInstancePossiblePlacements_v2 gave "
                   "profile ID ",
                   info->id, " a placement at memory slice ", pl.start,
                   " of size ", pl.size, ": not within the ", kMaxMemorySlices,
                   " memory slices a GPU may have")));
      }
    }
    MigProfilePlacements m;
    m.profile = p;
    m.profile_id = info->id;
    m.ci_profile_id = *ci;
    m.slice_count = info->sliceCount;
    m.name = MigProfileName(info->sliceCount, info->sliceCount, *memory,
                            info->memorySizeMB, MigProfileSuffix(p));
    m.memory_mib = info->memorySizeMB;
    m.multiprocessors = info->multiprocessorCount;
    m.copy_engines = info->copyEngineCount;
    m.decoders = info->decoderCount;
    m.encoders = info->encoderCount;
    m.jpegs = info->jpegCount;
    m.ofas = info->ofaCount;
    m.placements = *std::move(placements);
    out.push_back(std::move(m));
  }
  if (out.empty()) return none;
  return out;
}

MigGpuCounters GpuCounters(const std::vector<MigProfilePlacements>& profiles) {
  MigGpuCounters c;
  for (const MigProfilePlacements& p : profiles) {
    c.memory_mib = std::max(c.memory_mib, p.memory_mib);
    c.multiprocessors = std::max(c.multiprocessors, p.multiprocessors);
    c.copy_engines = std::max(c.copy_engines, p.copy_engines);
    c.decoders = std::max(c.decoders, p.decoders);
    c.encoders = std::max(c.encoders, p.encoders);
    c.jpegs = std::max(c.jpegs, p.jpegs);
    c.ofas = std::max(c.ofas, p.ofas);
    for (const nvmlGpuInstancePlacement_t& pl : p.placements) {
      c.memory_slices = std::max(c.memory_slices, pl.size);
    }
  }
  return c;
}

}  // namespace gdp
