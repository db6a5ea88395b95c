// Exported NVML entry points: Multi-Instance GPU (MIG devices, GPU
// instances, compute instances, profiles).
#include <cstring>
#include <optional>
#include <vector>

#include "fake_nvml/api_call.h"
#include "fake_nvml/machine.h"
#include "fake_nvml/mig_profiles.h"
#include "fake_nvml/mig_state.h"
#include "fake_nvml/nvml_exports.h"

namespace fn = gdp::fake_nvml;

namespace {

using Accept = fn::ApiCall::Accept;

bool MigEnabled(const fn::Gpu& gpu) {
  return gpu.mig_capable && gpu.mig_current == NVML_DEVICE_MIG_ENABLE;
}

nvmlGpuInstanceProfileInfo_t GiProfileInfo(const fn::GiProfile& p) {
  nvmlGpuInstanceProfileInfo_t info;
  std::memset(&info, 0, sizeof(info));
  info.id = p.id;
  info.isP2pSupported = 0;
  info.sliceCount = p.slices;
  info.instanceCount = p.instance_count;
  info.multiprocessorCount = p.multiprocessors;
  info.copyEngineCount = p.copy_engines;
  info.decoderCount = p.decoders;
  info.encoderCount = p.encoders;
  info.jpegCount = p.jpegs;
  info.ofaCount = p.ofas;
  info.memorySizeMB = p.memory_mib;
  return info;
}

nvmlComputeInstanceProfileInfo_t CiProfileInfo(const fn::GiProfile& gi,
                                               const fn::CiProfile& ci) {
  nvmlComputeInstanceProfileInfo_t info;
  std::memset(&info, 0, sizeof(info));
  info.id = ci.profile;
  info.sliceCount = ci.slices;
  info.instanceCount = ci.instance_count;
  info.multiprocessorCount = ci.multiprocessors;
  // Compute instances share their GPU instance's engines.
  info.sharedCopyEngineCount = gi.copy_engines;
  info.sharedDecoderCount = gi.decoders;
  info.sharedEncoderCount = gi.encoders;
  info.sharedJpegCount = gi.jpegs;
  info.sharedOfaCount = gi.ofas;
  return info;
}

// Writes the value of a MIG device's ID getter: INVALID_ARGUMENT for a GPU
// handle (these calls take MIG device handles).
template <typename Get>
nvmlReturn_t MigQuery(nvmlDevice_t device, unsigned* out, Get get) {
  fn::ApiCall call(device, Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (out == nullptr || !call.mig().has_value()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *out = get(call);
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                            unsigned int* count) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = MigEnabled(call.gpu()) ? fn::kMaxMigDevices : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                 unsigned int index,
                                                 nvmlDevice_t* mig_device) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (!MigEnabled(call.gpu())) return NVML_ERROR_NOT_SUPPORTED;
  if (mig_device == nullptr || index >= fn::kMaxMigDevices) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (index >= call.gpu().mig_devices.size()) return NVML_ERROR_NOT_FOUND;
  *mig_device = call.session().MigHandle(call.index(), index);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
                                         unsigned int* is_mig_device) {
  fn::ApiCall call(device, Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (is_mig_device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *is_mig_device = call.mig().has_value() ? 1 : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
    nvmlDevice_t mig_device, nvmlDevice_t* device) {
  fn::ApiCall call(mig_device, Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (device == nullptr || !call.mig().has_value()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *device = call.session().Handle(call.index());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return MigQuery(device, id, [](const fn::ApiCall& call) {
    return call.gpu_instance().id;
  });
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device,
                                            unsigned int* id) {
  return MigQuery(device, id, [](const fn::ApiCall& call) {
    return call.compute_instance().id;
  });
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
                                        nvmlDeviceAttributes_t* attributes) {
  fn::ApiCall call(device, Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (attributes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!call.mig().has_value()) return NVML_ERROR_NOT_SUPPORTED;
  const fn::GiProfile& gi = *call.gpu_instance().profile;
  const fn::CiProfile& ci = call.compute_instance().profile;
  std::memset(attributes, 0, sizeof(*attributes));
  attributes->multiprocessorCount = ci.multiprocessors;
  attributes->sharedCopyEngineCount = gi.copy_engines;
  attributes->sharedDecoderCount = gi.decoders;
  attributes->sharedEncoderCount = gi.encoders;
  attributes->sharedJpegCount = gi.jpegs;
  attributes->sharedOfaCount = gi.ofas;
  attributes->gpuInstanceSliceCount = gi.slices;
  attributes->computeInstanceSliceCount = ci.slices;
  attributes->memorySizeMB = gi.memory_mib;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile,
    nvmlGpuInstanceProfileInfo_t* info) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (!call.gpu().mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  // A profile index the driver does not know is INVALID_ARGUMENT, as driver
  // 580.159.04 answers for NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX.
  if (info == nullptr ||
      !fn::KnowsGpuInstanceProfile(call.session().machine().driver_version,
                                   profile)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const fn::MigProduct* product = call.gpu().mig_product;
  const fn::GiProfile* p =
      product == nullptr ? nullptr : fn::FindGiProfile(*product, profile);
  if (p == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  *info = GiProfileInfo(*p);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device,
                                       unsigned int profile_id,
                                       nvmlGpuInstance_t* gpu_instances,
                                       unsigned int* count) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (!MigEnabled(call.gpu())) return NVML_ERROR_NOT_SUPPORTED;
  const fn::MigProduct* product = call.gpu().mig_product;
  if (gpu_instances == nullptr || count == nullptr || product == nullptr ||
      fn::FindGiProfileById(*product, profile_id) == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned n = 0;
  const auto& instances = call.gpu().gpu_instances;
  for (unsigned g = 0; g < instances.size(); ++g) {
    if (instances[g].profile->id != profile_id) continue;
    gpu_instances[n++] = call.session().GpuInstanceHandle(call.index(), g);
  }
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t* gpu_instance) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (!MigEnabled(call.gpu())) return NVML_ERROR_NOT_SUPPORTED;
  if (gpu_instance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto& instances = call.gpu().gpu_instances;
  for (unsigned g = 0; g < instances.size(); ++g) {
    if (instances[g].id != id) continue;
    *gpu_instance = call.session().GpuInstanceHandle(call.index(), g);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpu_instance,
                                    nvmlGpuInstanceInfo_t* info) {
  fn::ApiCall call(gpu_instance);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const fn::GpuInstance& gi = call.gpu_instance();
  std::memset(info, 0, sizeof(*info));
  info->device = call.session().Handle(call.index());
  info->id = gi.id;
  info->profileId = gi.profile->id;
  info->placement.start = gi.start;
  info->placement.size = gi.profile->memory_slices;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpu_instance, unsigned int profile,
    unsigned int eng_profile, nvmlComputeInstanceProfileInfo_t* info) {
  fn::ApiCall call(gpu_instance);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (info == nullptr || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
      eng_profile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const fn::GiProfile& gi = *call.gpu_instance().profile;
  const std::optional<fn::CiProfile> ci = fn::FindCiProfile(gi, profile);
  if (!ci.has_value()) return NVML_ERROR_NOT_SUPPORTED;
  *info = CiProfileInfo(gi, *ci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    nvmlComputeInstance_t* compute_instances, unsigned int* count) {
  fn::ApiCall call(gpu_instance);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (compute_instances == nullptr || count == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  // Compute instance profile IDs are their NVML_COMPUTE_INSTANCE_PROFILE_*.
  if (!fn::FindCiProfile(*call.gpu_instance().profile, profile_id)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  unsigned n = 0;
  const auto& migs = call.gpu().mig_devices;
  for (unsigned m = 0; m < migs.size(); ++m) {
    if (migs[m].gpu_instance != call.gpu_instance_pos()) continue;
    const fn::ComputeInstance& ci =
        call.gpu_instance().compute_instances[migs[m].compute_instance];
    if (ci.profile.profile != profile_id) continue;
    compute_instances[n++] =
        call.session().ComputeInstanceHandle(call.index(), m);
  }
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(
    nvmlGpuInstance_t gpu_instance, unsigned int id,
    nvmlComputeInstance_t* compute_instance) {
  fn::ApiCall call(gpu_instance);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (compute_instance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto& migs = call.gpu().mig_devices;
  for (unsigned m = 0; m < migs.size(); ++m) {
    if (migs[m].gpu_instance != call.gpu_instance_pos()) continue;
    if (call.gpu_instance().compute_instances[migs[m].compute_instance].id !=
        id) {
      continue;
    }
    *compute_instance = call.session().ComputeInstanceHandle(call.index(), m);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(
    nvmlComputeInstance_t compute_instance, nvmlComputeInstanceInfo_t* info) {
  fn::ApiCall call(compute_instance);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const fn::ComputeInstance& ci = call.compute_instance();
  std::memset(info, 0, sizeof(*info));
  info->device = call.session().Handle(call.index());
  info->gpuInstance =
      call.session().GpuInstanceHandle(call.index(), call.gpu_instance_pos());
  info->id = ci.id;
  info->profileId = ci.profile.profile;
  info->placement.start = ci.start;
  info->placement.size = ci.profile.slices;
  return NVML_SUCCESS;
}

}  // extern "C"

// Making and destroying MIG instances at run time (mig_state.h). Changes go
// through Session::UpdateMig, so every process sharing the MIG state file
// sees them.
namespace {

// The position of GPU instance `id` of `gpu`.
unsigned GiPos(const fn::Gpu& gpu, unsigned id) {
  for (unsigned g = 0; g < gpu.gpu_instances.size(); ++g) {
    if (gpu.gpu_instances[g].id == id) return g;
  }
  return 0;
}

// The position in gpu.mig_devices of compute instance `ci` of GPU
// instance `gi`.
unsigned MigPos(const fn::Gpu& gpu, unsigned gi, unsigned ci) {
  for (unsigned m = 0; m < gpu.mig_devices.size(); ++m) {
    const fn::MigDevice& d = gpu.mig_devices[m];
    const fn::GpuInstance& g = gpu.gpu_instances[d.gpu_instance];
    if (g.id == gi && g.compute_instances[d.compute_instance].id == ci) {
      return m;
    }
  }
  return 0;
}

nvmlReturn_t CreateGi(nvmlDevice_t device, unsigned profile_id,
                      std::optional<unsigned> start,
                      nvmlGpuInstance_t* gpu_instance) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (!MigEnabled(call.gpu())) return NVML_ERROR_NOT_SUPPORTED;
  const fn::MigProduct* product = call.gpu().mig_product;
  const fn::GiProfile* profile =
      product == nullptr ? nullptr
                         : fn::FindGiProfileById(*product, profile_id);
  if (gpu_instance == nullptr || profile == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (call.session().euid() != 0) return NVML_ERROR_NO_PERMISSION;
  const unsigned gpu = call.index();
  unsigned id = 0;
  const nvmlReturn_t r = call.session().UpdateMig([&](fn::Machine& machine) {
    return fn::CreateGpuInstance(&machine.gpus[gpu], *profile, start, &id);
  });
  if (r != NVML_SUCCESS) return r;
  *gpu_instance = call.session().GpuInstanceHandle(gpu, GiPos(call.gpu(), id));
  return NVML_SUCCESS;
}

nvmlReturn_t CreateCi(nvmlGpuInstance_t gpu_instance, unsigned profile_id,
                      std::optional<unsigned> start,
                      nvmlComputeInstance_t* compute_instance) {
  fn::ApiCall call(gpu_instance);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (compute_instance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const std::optional<fn::CiProfile> profile =
      fn::FindCiProfile(*call.gpu_instance().profile, profile_id);
  if (!profile.has_value()) return NVML_ERROR_NOT_SUPPORTED;
  if (call.session().euid() != 0) return NVML_ERROR_NO_PERMISSION;
  const unsigned gpu = call.index();
  const unsigned gi = call.gpu_instance().id;
  unsigned id = 0;
  const nvmlReturn_t r = call.session().UpdateMig([&](fn::Machine& machine) {
    return fn::CreateComputeInstance(&machine.gpus[gpu], gi, *profile, start,
                                     &id);
  });
  // Destroyed by another process since the handle was resolved.
  if (r == NVML_ERROR_NOT_FOUND) return NVML_ERROR_INVALID_ARGUMENT;
  if (r != NVML_SUCCESS) return r;
  *compute_instance =
      call.session().ComputeInstanceHandle(gpu, MigPos(call.gpu(), gi, id));
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t* activation_status) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (activation_status == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!call.gpu().mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  if (mode != NVML_DEVICE_MIG_ENABLE && mode != NVML_DEVICE_MIG_DISABLE) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (call.session().euid() != 0) return NVML_ERROR_NO_PERMISSION;
  const unsigned gpu = call.index();
  nvmlReturn_t activation = NVML_SUCCESS;
  const nvmlReturn_t r = call.session().UpdateMig([&](fn::Machine& machine) {
    return fn::SetMigMode(&machine.gpus[gpu], mode, &activation);
  });
  if (r != NVML_SUCCESS) return r;
  *activation_status = activation;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profile_id,
    nvmlGpuInstancePlacement_t* placements, unsigned int* count) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  // Every placement of the profile, MIG enabled or not.
  const fn::MigProduct* product = call.gpu().mig_product;
  if (!call.gpu().mig_capable || product == nullptr) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  const fn::GiProfile* profile = fn::FindGiProfileById(*product, profile_id);
  if (profile == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  const std::vector<unsigned> starts = fn::PlacementStarts(*profile);
  if (placements != nullptr) {
    if (*count < starts.size()) {
      *count = starts.size();
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (size_t i = 0; i < starts.size(); ++i) {
      placements[i].start = starts[i];
      placements[i].size = profile->memory_slices;
    }
  }
  *count = starts.size();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                       unsigned int profile_id,
                                                       unsigned int* count) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!MigEnabled(call.gpu())) return NVML_ERROR_NOT_SUPPORTED;
  const fn::MigProduct* product = call.gpu().mig_product;
  const fn::GiProfile* profile =
      product == nullptr ? nullptr
                         : fn::FindGiProfileById(*product, profile_id);
  if (profile == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  *count = fn::RemainingGpuInstances(call.gpu(), *profile);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device,
                                         unsigned int profile_id,
                                         nvmlGpuInstance_t* gpu_instance) {
  return CreateGi(device, profile_id, std::nullopt, gpu_instance);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profile_id,
    const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpu_instance) {
  if (placement == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  {
    // The size must be the profile's; checked once the call is resolved.
    fn::ApiCall call(device);
    if (call.status() != NVML_SUCCESS) return call.status();
    const fn::MigProduct* product = call.gpu().mig_product;
    const fn::GiProfile* profile =
        product == nullptr ? nullptr
                           : fn::FindGiProfileById(*product, profile_id);
    if (profile != nullptr && placement->size != profile->memory_slices) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
  }
  return CreateGi(device, profile_id, placement->start, gpu_instance);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpu_instance) {
  fn::ApiCall call(gpu_instance);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (call.session().euid() != 0) return NVML_ERROR_NO_PERMISSION;
  const unsigned gpu = call.index();
  const unsigned gi = call.gpu_instance().id;
  const nvmlReturn_t r = call.session().UpdateMig([&](fn::Machine& machine) {
    return fn::DestroyGpuInstance(&machine.gpus[gpu], gi);
  });
  return r == NVML_ERROR_NOT_FOUND ? NVML_ERROR_INVALID_ARGUMENT : r;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    unsigned int* count) {
  fn::ApiCall call(gpu_instance);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const std::optional<fn::CiProfile> profile =
      fn::FindCiProfile(*call.gpu_instance().profile, profile_id);
  if (!profile.has_value()) return NVML_ERROR_NOT_SUPPORTED;
  *count = fn::RemainingComputeInstances(call.gpu_instance(), *profile);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    nvmlComputeInstancePlacement_t* placements, unsigned int* count) {
  fn::ApiCall call(gpu_instance);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const std::optional<fn::CiProfile> profile =
      fn::FindCiProfile(*call.gpu_instance().profile, profile_id);
  if (!profile.has_value()) return NVML_ERROR_NOT_SUPPORTED;
  const std::vector<unsigned> starts =
      fn::ComputeInstanceStarts(*call.gpu_instance().profile, *profile);
  if (placements != nullptr) {
    if (*count < starts.size()) {
      *count = starts.size();
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (size_t i = 0; i < starts.size(); ++i) {
      placements[i].start = starts[i];
      placements[i].size = profile->slices;
    }
  }
  *count = starts.size();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    nvmlComputeInstance_t* compute_instance) {
  return CreateCi(gpu_instance, profile_id, std::nullopt, compute_instance);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    const nvmlComputeInstancePlacement_t* placement,
    nvmlComputeInstance_t* compute_instance) {
  if (placement == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  {
    fn::ApiCall call(gpu_instance);
    if (call.status() != NVML_SUCCESS) return call.status();
    const std::optional<fn::CiProfile> profile =
        fn::FindCiProfile(*call.gpu_instance().profile, profile_id);
    if (profile.has_value() && placement->size != profile->slices) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
  }
  return CreateCi(gpu_instance, profile_id, placement->start, compute_instance);
}

nvmlReturn_t nvmlComputeInstanceDestroy(
    nvmlComputeInstance_t compute_instance) {
  fn::ApiCall call(compute_instance);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (call.session().euid() != 0) return NVML_ERROR_NO_PERMISSION;
  const unsigned gpu = call.index();
  const unsigned gi = call.gpu_instance().id;
  const unsigned ci = call.compute_instance().id;
  const nvmlReturn_t r = call.session().UpdateMig([&](fn::Machine& machine) {
    return fn::DestroyComputeInstance(&machine.gpus[gpu], gi, ci);
  });
  return r == NVML_ERROR_NOT_FOUND ? NVML_ERROR_INVALID_ARGUMENT : r;
}

}  // extern "C"
