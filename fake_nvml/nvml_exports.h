// Declarations of every C function the fake libnvidia-ml.so.1 exports. The
// types come from the project's NVML declarations (src/nvml/nvml_api.h);
// functions that only old clients or the fake itself need (the unversioned
// "_v1" entry points and a few extra queries) are declared here and nowhere
// else. Semantics follow NVIDIA's NVML API reference; fake_nvml/README.md
// describes what the fake adds (machine file, fault injection).
#ifndef GDP_FAKE_NVML_NVML_EXPORTS_H_
#define GDP_FAKE_NVML_NVML_EXPORTS_H_

#include <type_traits>

#include "nvml/nvml_api.h"

#define FAKE_NVML_EXPORT __attribute__((visibility("default")))

extern "C" {

// Initialization. Each successful init increments a reference count and
// nvmlShutdown decrements it; the machine file is read when the count goes
// from 0 to 1 and everything is torn down when it returns to 0.
FAKE_NVML_EXPORT nvmlReturn_t nvmlInit(void);
FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void);
FAKE_NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown(void);

// NVIDIA's text for `result`; never null, usable without init.
FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result);

// System queries.
FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version,
                                                         unsigned int length);
FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version);
FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version);

// Device enumeration and lookup.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index,
                                                         nvmlDevice_t* device);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid,
                                                        nvmlDevice_t* device);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetHandleByPciBusId(const char* pci_bus_id, nvmlDevice_t* device);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetHandleByPciBusId_v2(const char* pci_bus_id, nvmlDevice_t* device);

// Per-device identity.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                unsigned int length);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                unsigned int length);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device,
                                                       unsigned int* minor);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device,
                                                 unsigned int* index);

// PCI information. The v1 and v2 entry points write only the fields up to
// and including pciSubSystemId (older clients pass a smaller struct).
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device,
                                                   nvmlPciInfo_t* pci);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device,
                                                      nvmlPciInfo_t* pci);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device,
                                                      nvmlPciInfo_t* pci);

// Product brand and architecture. MIG device handles answer for their GPU.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device,
                                                 nvmlBrandType_t* type);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t* arch);

// Memory, compute capability and MIG mode.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                                      nvmlMemory_t* memory);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device,
                                                   unsigned int* current_mode,
                                                   unsigned int* pending_mode);

// Topology and NVLink.
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                    nvmlGpuTopologyLevel_t* path_info);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(
    nvmlDevice_t device, unsigned int link, nvmlEnableState_t* is_active);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(
    nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                    nvmlIntNvLinkDeviceType_t* node_type);

// Health signals. MIG device handles: NOT_SUPPORTED. Row remapping:
// NOT_SUPPORTED before Ampere; retired pages pending: NOT_SUPPORTED from
// Ampere on.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(
    nvmlDevice_t device, unsigned int* corr_rows, unsigned int* unc_rows,
    unsigned int* is_pending, unsigned int* failure_occurred);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(
    nvmlDevice_t device, nvmlEnableState_t* is_pending);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* width);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* width);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(
    nvmlDevice_t device, unsigned long long* reasons);
// Field values: the volatile ECC totals (NVML_FI_DEV_ECC_{SBE,DBE}_VOL_TOTAL)
// and, on a driver of R565 or later, NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
// any other field gets NOT_SUPPORTED in its own return code. GPU handles
// only.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(
    nvmlDevice_t device, int values_count, nvmlFieldValue_t* values);

// Events. nvmlEventSetWait (v1) writes only device, eventType and eventData
// (the v1 nvmlEventData_t); nvmlEventSetWait_v2 writes the whole struct.
FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(
    nvmlDevice_t device, unsigned long long event_types, nvmlEventSet_t set);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(
    nvmlDevice_t device, unsigned long long* event_types);
FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set,
                                               nvmlEventData_t* data,
                                               unsigned int timeout_ms);
FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set,
                                                  nvmlEventData_t* data,
                                                  unsigned int timeout_ms);
FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

// Multi-Instance GPU. MIG device handles (from
// nvmlDeviceGetMigDeviceHandleByIndex or a MIG UUID) are accepted by
// nvmlDeviceGetName, _GetUUID, _GetIndex, _GetMemoryInfo(_v2),
// _GetCudaComputeCapability, _GetBrand, _GetArchitecture and the MIG device
// queries below; other device
// calls return NVML_ERROR_NOT_SUPPORTED for them. MIG device queries given a
// GPU handle return NVML_ERROR_INVALID_ARGUMENT (nvmlDeviceGetAttributes_v2:
// NVML_ERROR_NOT_SUPPORTED).
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(
    nvmlDevice_t device, unsigned int index, nvmlDevice_t* mig_device);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* is_mig_device);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
    nvmlDevice_t mig_device, nvmlDevice_t* device);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device,
                                                         unsigned int* id);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(
    nvmlDevice_t device, nvmlDeviceAttributes_t* attributes);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                    nvmlGpuInstanceProfileInfo_t* info);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(
    nvmlDevice_t device, unsigned int profile_id,
    nvmlGpuInstance_t* gpu_instances, unsigned int* count);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(
    nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gpu_instance);
FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(
    nvmlGpuInstance_t gpu_instance, nvmlGpuInstanceInfo_t* info);
FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpu_instance, unsigned int profile,
    unsigned int eng_profile, nvmlComputeInstanceProfileInfo_t* info);
FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    nvmlComputeInstance_t* compute_instances, unsigned int* count);
FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(
    nvmlGpuInstance_t gpu_instance, unsigned int id,
    nvmlComputeInstance_t* compute_instance);
FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(
    nvmlComputeInstance_t compute_instance, nvmlComputeInstanceInfo_t* info);

// Making and destroying MIG instances (README.md, "MIG made at run time").
// Changes need an effective UID of 0 (NO_PERMISSION) and are shared with
// every process using the same MIG state file.
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(
    nvmlDevice_t device, unsigned int mode, nvmlReturn_t* activation_status);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profile_id,
    nvmlGpuInstancePlacement_t* placements, unsigned int* count);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(
    nvmlDevice_t device, unsigned int profile_id, unsigned int* count);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profile_id,
                            nvmlGpuInstance_t* gpu_instance);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profile_id,
    const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpu_instance);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpu_instance);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceGetComputeInstanceRemainingCapacity(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    unsigned int* count);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceGetComputeInstancePossiblePlacements(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    nvmlComputeInstancePlacement_t* placements, unsigned int* count);
FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    nvmlComputeInstance_t* compute_instance);
FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(
    nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    const nvmlComputeInstancePlacement_t* placement,
    nvmlComputeInstance_t* compute_instance);
FAKE_NVML_EXPORT nvmlReturn_t
nvmlComputeInstanceDestroy(nvmlComputeInstance_t compute_instance);

// Per-cgroup GPU memory limits (R615; README.md, "Memory limits"). GPU
// handles only (a MIG device handle: NOT_SUPPORTED); NOT_SUPPORTED when the
// machine's driver is older than R615; the setter needs an effective UID of
// 0 (NO_PERMISSION).
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetMemoryLimits_v1(
    nvmlDevice_t device, nvmlSetMemoryLimits_v1_t* limits);
FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryLimits_v1(
    nvmlDevice_t device, nvmlGetMemoryLimits_v1_t* limits);

}  // extern "C"

// The project's client resolves these symbols through the Fn_* pointer
// types of nvml_api.h; they must match what the fake defines.
#define FAKE_NVML_SAME_TYPE(name) \
  static_assert(std::is_same_v<Fn_##name, decltype(&name)>, #name)
FAKE_NVML_SAME_TYPE(nvmlInit_v2);
FAKE_NVML_SAME_TYPE(nvmlInitWithFlags);
FAKE_NVML_SAME_TYPE(nvmlShutdown);
FAKE_NVML_SAME_TYPE(nvmlErrorString);
FAKE_NVML_SAME_TYPE(nvmlSystemGetDriverVersion);
FAKE_NVML_SAME_TYPE(nvmlSystemGetCudaDriverVersion_v2);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetCount_v2);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetHandleByIndex_v2);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetHandleByUUID);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetName);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetUUID);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetMinorNumber);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetIndex);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetPciInfo_v3);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetMemoryInfo);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetCudaComputeCapability);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetBrand);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetArchitecture);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetMigMode);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetTopologyCommonAncestor);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetNvLinkState);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetNvLinkRemotePciInfo_v2);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetNvLinkRemoteDeviceType);
FAKE_NVML_SAME_TYPE(nvmlEventSetCreate);
FAKE_NVML_SAME_TYPE(nvmlDeviceRegisterEvents);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetSupportedEventTypes);
FAKE_NVML_SAME_TYPE(nvmlEventSetWait);
FAKE_NVML_SAME_TYPE(nvmlEventSetWait_v2);
FAKE_NVML_SAME_TYPE(nvmlEventSetFree);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetMaxMigDeviceCount);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetMigDeviceHandleByIndex);
FAKE_NVML_SAME_TYPE(nvmlDeviceIsMigDeviceHandle);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetDeviceHandleFromMigDeviceHandle);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetGpuInstanceId);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetComputeInstanceId);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetAttributes_v2);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetGpuInstanceProfileInfo);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetGpuInstances);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetGpuInstanceById);
FAKE_NVML_SAME_TYPE(nvmlGpuInstanceGetInfo);
FAKE_NVML_SAME_TYPE(nvmlGpuInstanceGetComputeInstanceProfileInfo);
FAKE_NVML_SAME_TYPE(nvmlGpuInstanceGetComputeInstances);
FAKE_NVML_SAME_TYPE(nvmlGpuInstanceGetComputeInstanceById);
FAKE_NVML_SAME_TYPE(nvmlComputeInstanceGetInfo_v2);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetRemappedRows);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetRetiredPagesPendingStatus);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetCurrPcieLinkGeneration);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetMaxPcieLinkGeneration);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetCurrPcieLinkWidth);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetMaxPcieLinkWidth);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetCurrentClocksThrottleReasons);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetFieldValues);
FAKE_NVML_SAME_TYPE(nvmlDeviceSetMemoryLimits_v1);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetMemoryLimits_v1);
#undef FAKE_NVML_SAME_TYPE

#endif  // GDP_FAKE_NVML_NVML_EXPORTS_H_
