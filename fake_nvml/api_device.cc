// Exported NVML entry points: per-device queries.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>

#include "fake_nvml/api_call.h"
#include "fake_nvml/machine.h"
#include "fake_nvml/memory_limits.h"
#include "fake_nvml/nvml_exports.h"

namespace fn = gdp::fake_nvml;

namespace {

// Fills the first `bytes` bytes of *pci with the device's PCI information.
nvmlReturn_t GetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci, size_t bytes) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const fn::Gpu& gpu = call.gpu();
  const nvmlPciInfo_t info =
      fn::MakePciInfo(gpu.pci, gpu.pci_device_id, gpu.pci_subsystem_id);
  std::memcpy(pci, &info, bytes);
  return NVML_SUCCESS;
}

// What nvmlDeviceGetName reports for the call's device: the product name,
// and for a MIG device " MIG " and its profile ("... MIG 1g.10gb").
std::string DeviceName(const fn::ApiCall& call) {
  if (!call.mig().has_value()) return call.gpu().name;
  return call.gpu().name + " MIG " + call.compute_instance().profile.name;
}

// Total and used memory of the call's device, in bytes: a MIG device has
// its GPU instance's memory, none of it used.
void DeviceMemory(const fn::ApiCall& call, unsigned long long* total,
                  unsigned long long* used) {
  if (call.mig().has_value()) {
    *total = call.gpu_instance().profile->memory_mib << 20;
    *used = 0;
  } else {
    *total = call.gpu().memory_total_bytes;
    *used = call.gpu().memory_used_bytes;
  }
}

// The hard memory limit of the calling process's own cgroup on the call's
// GPU (per-cgroup memory limits, R615), or nullopt when it has none: a
// limit set on an ancestor does not count (as under the dmem backend, where
// a container's leaf cgroup has its own dmem.max). Errors reading the
// limits count as none.
std::optional<unsigned long long> OwnHardLimit(const fn::ApiCall& call) {
  const std::optional<std::string>& path = call.session().memory_limits_path();
  if (call.mig().has_value() || !path.has_value() ||
      !fn::HasMemoryLimits(call.session().machine().driver_version)) {
    return std::nullopt;
  }
  const std::optional<fn::CgroupDir> own = fn::OwnCgroup();
  if (!own.has_value()) return std::nullopt;
  absl::StatusOr<fn::MemoryLimitEntry> entry =
      fn::LookupMemoryLimits(*path, call.gpu().uuid, *own);
  if (!entry.ok() || entry->hard == fn::kMemoryLimitMax) return std::nullopt;
  return entry->hard;
}

// The v1/v2 struct ends after pciSubSystemId.
constexpr size_t kPciInfoV2Bytes =
    offsetof(nvmlPciInfo_t, pciSubSystemId) + sizeof(unsigned int);

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                               unsigned int length) {
  fn::ApiCall call(device, fn::ApiCall::Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  return fn::CopyString(DeviceName(call), name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                               unsigned int length) {
  fn::ApiCall call(device, fn::ApiCall::Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  return fn::CopyString(
      call.mig().has_value() ? call.mig_device().uuid : call.gpu().uuid, uuid,
      length);
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device,
                                      unsigned int* minor) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *minor = call.gpu().minor;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  fn::ApiCall call(device, fn::ApiCall::Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *index = call.mig().value_or(call.index());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return GetPciInfo(device, pci, kPciInfoV2Bytes);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return GetPciInfo(device, pci, kPciInfoV2Bytes);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return GetPciInfo(device, pci, sizeof(nvmlPciInfo_t));
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                     nvmlMemory_t* memory) {
  fn::ApiCall call(device, fn::ApiCall::Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceMemory(call, &memory->total, &memory->used);
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                        nvmlMemory_v2_t* memory) {
  fn::ApiCall call(device, fn::ApiCall::Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) {
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  DeviceMemory(call, &memory->total, &memory->used);
  memory->reserved = 0;
  memory->free = memory->total - memory->used;
  if (const std::optional<unsigned long long> hard = OwnHardLimit(call)) {
    // Inside a limited cgroup: what the cgroup may hold and holds (the fake
    // runs nothing, so none), never more free than the GPU has.
    memory->free = std::min(*hard, memory->free);
    memory->total = *hard;
    memory->used = 0;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                int* minor) {
  fn::ApiCall call(device, fn::ApiCall::Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (major == nullptr || minor == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *major = call.gpu().cc_major;
  *minor = call.gpu().cc_minor;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t* type) {
  fn::ApiCall call(device, fn::ApiCall::Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *type = call.gpu().brand;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device,
                                       nvmlDeviceArchitecture_t* arch) {
  fn::ApiCall call(device, fn::ApiCall::Accept::kGpuOrMig);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (arch == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *arch = call.gpu().architecture;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device,
                                  unsigned int* current_mode,
                                  unsigned int* pending_mode) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (!call.gpu().mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  if (current_mode == nullptr || pending_mode == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *current_mode = call.gpu().mig_current;
  *pending_mode = call.gpu().mig_pending;
  return NVML_SUCCESS;
}

}  // extern "C"
