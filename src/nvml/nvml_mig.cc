// Nvml: MIG devices, GPU and compute instances (optional entry points).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "nvml/nvml.h"
#include "nvml/nvml_internal.h"

namespace gdp {

bool Nvml::HasMig() const {
  bool all = true;
#define GDP_NVML_PRESENT(name) all = all && fns_->name != nullptr;
  GDP_NVML_MIG_SYMBOLS(GDP_NVML_PRESENT)
#undef GDP_NVML_PRESENT
  return all;
}

absl::StatusOr<bool> Nvml::MigEnabled(nvmlDevice_t device) const {
  unsigned current = 0, pending = 0;
  absl::Status s =
      CallOptional(fns_->nvmlDeviceGetMigMode, "nvmlDeviceGetMigMode", device,
                   &current, &pending);
  if (!s.ok()) return s;
  return current == NVML_DEVICE_MIG_ENABLE;
}

absl::StatusOr<unsigned> Nvml::MaxMigDeviceCount(nvmlDevice_t gpu) const {
  // NVIDIA's GPUs hold at most 7 MIG devices; callers loop over the count.
  constexpr unsigned kMaxMigDevices = 64;
  unsigned count = 0;
  absl::Status s = CallOptional(fns_->nvmlDeviceGetMaxMigDeviceCount,
                                "nvmlDeviceGetMaxMigDeviceCount", gpu, &count);
  if (!s.ok()) return s;
  if (count > kMaxMigDevices) {
    return absl::OutOfRangeError(absl::StrCat(
        "nvmlDeviceGetMaxMigDeviceCount: ", count,
        " MIG devices, more than the ", kMaxMigDevices, " a GPU can hold"));
  }
  return count;
}

absl::StatusOr<nvmlDevice_t> Nvml::MigDeviceByIndex(nvmlDevice_t gpu,
                                                    unsigned index) const {
  nvmlDevice_t mig = nullptr;
  absl::Status s =
      CallOptional(fns_->nvmlDeviceGetMigDeviceHandleByIndex,
                   "nvmlDeviceGetMigDeviceHandleByIndex", gpu, index, &mig);
  if (!s.ok()) return s;
  return mig;
}

absl::StatusOr<bool> Nvml::IsMigDevice(nvmlDevice_t device) const {
  unsigned is_mig = 0;
  absl::Status s = CallOptional(fns_->nvmlDeviceIsMigDeviceHandle,
                                "nvmlDeviceIsMigDeviceHandle", device, &is_mig);
  if (!s.ok()) return s;
  return is_mig != 0;
}

absl::StatusOr<nvmlDevice_t> Nvml::MigParent(nvmlDevice_t mig) const {
  nvmlDevice_t parent = nullptr;
  absl::Status s = CallOptional(
      fns_->nvmlDeviceGetDeviceHandleFromMigDeviceHandle,
      "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", mig, &parent);
  if (!s.ok()) return s;
  return parent;
}

absl::StatusOr<unsigned> Nvml::GpuInstanceId(nvmlDevice_t mig) const {
  unsigned id = 0;
  absl::Status s = CallOptional(fns_->nvmlDeviceGetGpuInstanceId,
                                "nvmlDeviceGetGpuInstanceId", mig, &id);
  if (!s.ok()) return s;
  return id;
}

absl::StatusOr<unsigned> Nvml::ComputeInstanceId(nvmlDevice_t mig) const {
  unsigned id = 0;
  absl::Status s = CallOptional(fns_->nvmlDeviceGetComputeInstanceId,
                                "nvmlDeviceGetComputeInstanceId", mig, &id);
  if (!s.ok()) return s;
  return id;
}

absl::StatusOr<nvmlDeviceAttributes_t> Nvml::Attributes(
    nvmlDevice_t mig) const {
  nvmlDeviceAttributes_t attributes{};
  absl::Status s = CallOptional(fns_->nvmlDeviceGetAttributes_v2,
                                "nvmlDeviceGetAttributes_v2", mig, &attributes);
  if (!s.ok()) return s;
  return attributes;
}

absl::StatusOr<nvmlGpuInstance_t> Nvml::GpuInstanceById(nvmlDevice_t gpu,
                                                        unsigned id) const {
  nvmlGpuInstance_t gi = nullptr;
  absl::Status s = CallOptional(fns_->nvmlDeviceGetGpuInstanceById,
                                "nvmlDeviceGetGpuInstanceById", gpu, id, &gi);
  if (!s.ok()) return s;
  return gi;
}

absl::StatusOr<nvmlGpuInstanceInfo_t> Nvml::GpuInstanceInfo(
    nvmlGpuInstance_t gpu_instance) const {
  nvmlGpuInstanceInfo_t info{};
  absl::Status s = CallOptional(fns_->nvmlGpuInstanceGetInfo,
                                "nvmlGpuInstanceGetInfo", gpu_instance, &info);
  if (!s.ok()) return s;
  return info;
}

absl::StatusOr<nvmlGpuInstanceProfileInfo_t> Nvml::GpuInstanceProfileInfo(
    nvmlDevice_t gpu, unsigned profile) const {
  nvmlGpuInstanceProfileInfo_t info{};
  absl::Status s =
      CallOptional(fns_->nvmlDeviceGetGpuInstanceProfileInfo,
                   "nvmlDeviceGetGpuInstanceProfileInfo", gpu, profile, &info);
  if (!s.ok()) return s;
  return info;
}

}  // namespace gdp
