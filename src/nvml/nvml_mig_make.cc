// Nvml: making, destroying and listing MIG instances on demand (dynamic
// MIG). Optional entry points, as the other MIG ones.
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "nvml/nvml.h"
#include "nvml/nvml_internal.h"

namespace gdp {
namespace {

// Bounds of what one listing call may return. NVML numbers GPU instances
// 0-14 and compute instances 0-7 within one; a profile that says it fits
// more than this is refused rather than trusted with a buffer.
constexpr unsigned kMaxListed = 64;
constexpr unsigned kMaxPlacements = 64;

// `s` with `what` (the instance or profile it was about) added to its
// message; the code and the payload (the NVML code) stay.
absl::Status About(const absl::Status& s, absl::string_view what) {
  if (s.ok()) return s;
  absl::Status out(s.code(), absl::StrCat(s.message(), " (", what, ")"));
  s.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

// Whether `s` says an instance listed a moment ago was destroyed since
// (by another process): its handle is no longer valid.
bool Vanished(const absl::Status& s) {
  const nvmlReturn_t code = NvmlCode(s);
  return code == NVML_ERROR_INVALID_ARGUMENT || code == NVML_ERROR_NOT_FOUND;
}

std::string GiName(unsigned gi_id) {
  return absl::StrCat("GPU instance ", gi_id);
}

}  // namespace

bool Nvml::HasMigMaking() const {
  bool all = fns_->nvmlDeviceGetGpuInstanceById != nullptr &&
             fns_->nvmlGpuInstanceGetInfo != nullptr &&
             fns_->nvmlDeviceGetGpuInstanceProfileInfo != nullptr;
#define GDP_NVML_PRESENT(name) all = all && fns_->name != nullptr;
  GDP_NVML_MIG_MAKE_SYMBOLS(GDP_NVML_PRESENT)
#undef GDP_NVML_PRESENT
  return all;
}

absl::StatusOr<std::vector<nvmlGpuInstancePlacement_t>>
Nvml::GpuInstancePossiblePlacements(nvmlDevice_t gpu,
                                    unsigned profile_id) const {
  std::vector<nvmlGpuInstancePlacement_t> placements(kMaxPlacements);
  unsigned count = kMaxPlacements;
  absl::Status s =
      CallOptional(fns_->nvmlDeviceGetGpuInstancePossiblePlacements_v2,
                   "nvmlDeviceGetGpuInstancePossiblePlacements_v2", gpu,
                   profile_id, placements.data(), &count);
  if (!s.ok()) {
    return About(s, absl::StrCat("GPU instance profile ID ", profile_id));
  }
  if (count > kMaxPlacements) {
    return absl::InternalError(
        absl::StrCat("nvmlDeviceGetGpuInstancePossiblePlacements_v2: ", count,
                     " placements for profile ID ", profile_id,
                     ", more than the ", kMaxPlacements, " a GPU can have"));
  }
  placements.resize(count);
  return placements;
}

absl::StatusOr<unsigned> Nvml::CreateGpuInstance(
    nvmlDevice_t gpu, unsigned profile_id,
    nvmlGpuInstancePlacement_t placement) const {
  nvmlGpuInstance_t gi = nullptr;
  absl::Status s = CallOptional(
      fns_->nvmlDeviceCreateGpuInstanceWithPlacement,
      "nvmlDeviceCreateGpuInstanceWithPlacement", gpu, profile_id,
      static_cast<const nvmlGpuInstancePlacement_t*>(&placement), &gi);
  if (!s.ok()) {
    return About(s, absl::StrCat("GPU instance profile ID ", profile_id,
                                 " at memory slices ", placement.start, "+",
                                 placement.size));
  }
  absl::StatusOr<nvmlGpuInstanceInfo_t> info = GpuInstanceInfo(gi);
  if (!info.ok()) {
    // Its ID unknown, no caller could find it to destroy it: undone here.
    absl::Status undone = CallOptional(fns_->nvmlGpuInstanceDestroy,
                                       "nvmlGpuInstanceDestroy", gi);
    return About(
        info.status(),
        absl::StrCat("the GPU instance just made of profile ID ", profile_id,
                     " at memory slice ", placement.start,
                     undone.ok() ? "; destroyed again"
                                 : absl::StrCat("; destroying it failed too: ",
                                                undone.message())));
  }
  return info->id;
}

absl::StatusOr<unsigned> Nvml::CreateComputeInstance(
    nvmlDevice_t gpu, unsigned gi_id, unsigned ci_profile_id) const {
  absl::StatusOr<nvmlGpuInstance_t> gi = GpuInstanceById(gpu, gi_id);
  if (!gi.ok()) return About(gi.status(), GiName(gi_id));
  nvmlComputeInstance_t ci = nullptr;
  absl::Status s = CallOptional(fns_->nvmlGpuInstanceCreateComputeInstance,
                                "nvmlGpuInstanceCreateComputeInstance", *gi,
                                ci_profile_id, &ci);
  const std::string what = absl::StrCat("compute instance profile ID ",
                                        ci_profile_id, " in ", GiName(gi_id));
  if (!s.ok()) return About(s, what);
  nvmlComputeInstanceInfo_t info{};
  s = CallOptional(fns_->nvmlComputeInstanceGetInfo_v2,
                   "nvmlComputeInstanceGetInfo_v2", ci, &info);
  if (!s.ok()) {
    // Its ID unknown, no caller could find it to destroy it: undone here.
    absl::Status undone = CallOptional(fns_->nvmlComputeInstanceDestroy,
                                       "nvmlComputeInstanceDestroy", ci);
    return About(
        s, absl::StrCat(what, undone.ok()
                                  ? "; destroyed again"
                                  : absl::StrCat("; destroying it failed too: ",
                                                 undone.message())));
  }
  return info.id;
}

absl::Status Nvml::DestroyComputeInstance(nvmlDevice_t gpu, unsigned gi_id,
                                          unsigned ci_id) const {
  absl::StatusOr<nvmlGpuInstance_t> gi = GpuInstanceById(gpu, gi_id);
  if (!gi.ok()) return About(gi.status(), GiName(gi_id));
  const std::string what =
      absl::StrCat("compute instance ", ci_id, " of ", GiName(gi_id));
  nvmlComputeInstance_t ci = nullptr;
  absl::Status s =
      CallOptional(fns_->nvmlGpuInstanceGetComputeInstanceById,
                   "nvmlGpuInstanceGetComputeInstanceById", *gi, ci_id, &ci);
  if (!s.ok()) return About(s, what);
  return About(CallOptional(fns_->nvmlComputeInstanceDestroy,
                            "nvmlComputeInstanceDestroy", ci),
               what);
}

absl::Status Nvml::DestroyGpuInstance(nvmlDevice_t gpu, unsigned gi_id) const {
  absl::StatusOr<nvmlGpuInstance_t> gi = GpuInstanceById(gpu, gi_id);
  if (!gi.ok()) return About(gi.status(), GiName(gi_id));
  return About(
      CallOptional(fns_->nvmlGpuInstanceDestroy, "nvmlGpuInstanceDestroy", *gi),
      GiName(gi_id));
}

absl::StatusOr<std::vector<Nvml::GpuInstanceState>> Nvml::GpuInstances(
    nvmlDevice_t gpu) const {
  // NVML answers NOT_SUPPORTED for a GPU without MIG; with MIG off it
  // would list no profile's instances, which must not read as "none made".
  absl::StatusOr<bool> enabled = MigEnabled(gpu);
  if (!enabled.ok()) return enabled.status();
  if (!*enabled) {
    absl::Status off(absl::StatusCode::kUnimplemented,
                     "nvmlDeviceGetGpuInstances: MIG mode is off on the GPU");
    off.SetPayload(
        kNvmlPayloadUrl,
        absl::Cord(absl::StrCat(static_cast<int>(NVML_ERROR_NOT_SUPPORTED))));
    return off;
  }
  std::vector<GpuInstanceState> out;
  std::vector<unsigned> profile_ids;  // each profile ID listed once
  std::vector<nvmlGpuInstance_t> gis(kMaxListed);
  for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
    absl::StatusOr<nvmlGpuInstanceProfileInfo_t> profile =
        GpuInstanceProfileInfo(gpu, p);
    if (!profile.ok()) {
      // A profile this GPU lacks, or one past what this driver knows.
      const nvmlReturn_t code = NvmlCode(profile.status());
      if (code == NVML_ERROR_NOT_SUPPORTED ||
          code == NVML_ERROR_INVALID_ARGUMENT) {
        continue;
      }
      return profile.status();
    }
    if (std::find(profile_ids.begin(), profile_ids.end(), profile->id) !=
        profile_ids.end()) {
      continue;
    }
    profile_ids.push_back(profile->id);
    if (profile->instanceCount > kMaxListed) {
      return absl::InternalError(
          absl::StrCat("nvmlDeviceGetGpuInstanceProfileInfo: profile ID ",
                       profile->id, " fits ", profile->instanceCount,
                       " instances, more than ", kMaxListed));
    }
    unsigned count = 0;
    absl::Status s = CallOptional(fns_->nvmlDeviceGetGpuInstances,
                                  "nvmlDeviceGetGpuInstances", gpu, profile->id,
                                  gis.data(), &count);
    if (!s.ok()) {
      return About(s, absl::StrCat("GPU instance profile ID ", profile->id));
    }
    if (count > kMaxListed) {
      return absl::InternalError(
          absl::StrCat("nvmlDeviceGetGpuInstances: ", count,
                       " instances of profile ID ", profile->id));
    }
    for (unsigned g = 0; g < count; ++g) {
      absl::StatusOr<nvmlGpuInstanceInfo_t> info = GpuInstanceInfo(gis[g]);
      if (Vanished(info.status())) continue;
      if (!info.ok()) return info.status();
      GpuInstanceState state;
      state.gi_id = info->id;
      state.profile_id = info->profileId;
      state.placement = info->placement;
      absl::StatusOr<std::vector<unsigned>> cis = ComputeInstanceIds(gis[g]);
      if (Vanished(cis.status())) continue;
      if (!cis.ok()) return About(cis.status(), GiName(info->id));
      state.ci_ids = *std::move(cis);
      out.push_back(std::move(state));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const GpuInstanceState& a, const GpuInstanceState& b) {
              if (a.placement.start != b.placement.start) {
                return a.placement.start < b.placement.start;
              }
              return a.gi_id < b.gi_id;
            });
  return out;
}

absl::StatusOr<std::vector<unsigned>> Nvml::ComputeInstanceIds(
    nvmlGpuInstance_t gi) const {
  std::vector<unsigned> ids;
  std::vector<unsigned> profile_ids;
  std::vector<nvmlComputeInstance_t> cis(kMaxListed);
  for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlComputeInstanceProfileInfo_t profile{};
    absl::Status s = CallOptional(
        fns_->nvmlGpuInstanceGetComputeInstanceProfileInfo,
        "nvmlGpuInstanceGetComputeInstanceProfileInfo", gi, p,
        static_cast<unsigned>(NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED),
        &profile);
    if (!s.ok()) {
      const nvmlReturn_t code = NvmlCode(s);
      if (code == NVML_ERROR_NOT_SUPPORTED ||
          code == NVML_ERROR_INVALID_ARGUMENT) {
        continue;
      }
      return s;
    }
    if (std::find(profile_ids.begin(), profile_ids.end(), profile.id) !=
        profile_ids.end()) {
      continue;
    }
    profile_ids.push_back(profile.id);
    if (profile.instanceCount > kMaxListed) {
      return absl::InternalError(absl::StrCat(
          "nvmlGpuInstanceGetComputeInstanceProfileInfo: profile ID ",
          profile.id, " fits ", profile.instanceCount, " instances, more than ",
          kMaxListed));
    }
    unsigned count = 0;
    s = CallOptional(fns_->nvmlGpuInstanceGetComputeInstances,
                     "nvmlGpuInstanceGetComputeInstances", gi, profile.id,
                     cis.data(), &count);
    if (!s.ok()) return s;
    if (count > kMaxListed) {
      return absl::InternalError(
          absl::StrCat("nvmlGpuInstanceGetComputeInstances: ", count,
                       " instances of profile ID ", profile.id));
    }
    for (unsigned c = 0; c < count; ++c) {
      nvmlComputeInstanceInfo_t info{};
      s = CallOptional(fns_->nvmlComputeInstanceGetInfo_v2,
                       "nvmlComputeInstanceGetInfo_v2", cis[c], &info);
      if (Vanished(s)) continue;
      if (!s.ok()) return s;
      ids.push_back(info.id);
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace gdp
