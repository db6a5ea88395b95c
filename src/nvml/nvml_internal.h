// Private to src/nvml/nvml*.cc: the NVML entry points we resolve, and the
// templates every call goes through. Nothing outside the Nvml class
// includes this.
#ifndef GDP_NVML_NVML_INTERNAL_H_
#define GDP_NVML_NVML_INTERNAL_H_

#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "nvml/deadline.h"
#include "nvml/nvml.h"

namespace gdp {

// The payload of a Status made from an NVML error: its nvmlReturn_t number
// (read by NvmlCode).
inline constexpr char kNvmlPayloadUrl[] = "gpu-device-plugin/nvml-return";

// Every entry point we need. X(name) expands once per symbol. A library
// lacking one of these is refused.
#define GDP_NVML_SYMBOLS(X)             \
  X(nvmlInit_v2)                        \
  X(nvmlShutdown)                       \
  X(nvmlErrorString)                    \
  X(nvmlSystemGetDriverVersion)         \
  X(nvmlSystemGetCudaDriverVersion_v2)  \
  X(nvmlDeviceGetCount_v2)              \
  X(nvmlDeviceGetHandleByIndex_v2)      \
  X(nvmlDeviceGetName)                  \
  X(nvmlDeviceGetUUID)                  \
  X(nvmlDeviceGetMinorNumber)           \
  X(nvmlDeviceGetPciInfo_v3)            \
  X(nvmlDeviceGetMemoryInfo)            \
  X(nvmlDeviceGetCudaComputeCapability) \
  X(nvmlDeviceGetHandleByUUID)          \
  X(nvmlDeviceGetSupportedEventTypes)   \
  X(nvmlEventSetCreate)                 \
  X(nvmlDeviceRegisterEvents)           \
  X(nvmlEventSetFree)

// Event waits: nvmlEventSetWait_v2 (R450 and later) reports MIG instances;
// the older nvmlEventSetWait is used where it is missing. Either is enough.
#define GDP_NVML_WAIT_SYMBOLS(X) \
  X(nvmlEventSetWait_v2)         \
  X(nvmlEventSetWait)

// The MIG entry points (R450 and later): optional, so that an older driver
// still loads; without them MIG is reported unavailable.
#define GDP_NVML_MIG_SYMBOLS(X)                   \
  X(nvmlDeviceGetMigMode)                         \
  X(nvmlDeviceGetMaxMigDeviceCount)               \
  X(nvmlDeviceGetMigDeviceHandleByIndex)          \
  X(nvmlDeviceIsMigDeviceHandle)                  \
  X(nvmlDeviceGetDeviceHandleFromMigDeviceHandle) \
  X(nvmlDeviceGetGpuInstanceId)                   \
  X(nvmlDeviceGetComputeInstanceId)               \
  X(nvmlDeviceGetAttributes_v2)                   \
  X(nvmlDeviceGetGpuInstanceById)                 \
  X(nvmlGpuInstanceGetInfo)                       \
  X(nvmlDeviceGetGpuInstanceProfileInfo)

// Making and destroying MIG instances, and listing them (dynamic MIG):
// optional; without one, HasMigMaking() is false and the calls needing it
// are Unimplemented.
#define GDP_NVML_MIG_MAKE_SYMBOLS(X)               \
  X(nvmlDeviceGetGpuInstancePossiblePlacements_v2) \
  X(nvmlDeviceCreateGpuInstanceWithPlacement)      \
  X(nvmlGpuInstanceDestroy)                        \
  X(nvmlDeviceGetGpuInstances)                     \
  X(nvmlGpuInstanceCreateComputeInstance)          \
  X(nvmlGpuInstanceGetComputeInstances)            \
  X(nvmlGpuInstanceGetComputeInstanceById)         \
  X(nvmlComputeInstanceGetInfo_v2)                 \
  X(nvmlComputeInstanceDestroy)                    \
  X(nvmlGpuInstanceGetComputeInstanceProfileInfo)

// Topology (NVLink and PCIe relations): optional; without them every GPU
// pair is treated as unrelated.
#define GDP_NVML_TOPOLOGY_SYMBOLS(X)     \
  X(nvmlDeviceGetTopologyCommonAncestor) \
  X(nvmlDeviceGetNvLinkState)            \
  X(nvmlDeviceGetNvLinkRemotePciInfo_v2) \
  X(nvmlDeviceGetNvLinkRemoteDeviceType)

// Product brand and architecture: optional (nvmlDeviceGetArchitecture came
// with R470); without them both are reported Unimplemented.
#define GDP_NVML_IDENTITY_SYMBOLS(X) \
  X(nvmlDeviceGetBrand)              \
  X(nvmlDeviceGetArchitecture)

// Health signals beyond events (health/signals.h): optional; without one
// its signal is reported Unimplemented. nvmlDeviceGetRemappedRows came
// with R450; the others are far older (nvmlDeviceGetFieldValues too, though
// the recovery action field it reads came with R565).
#define GDP_NVML_HEALTH_SYMBOLS(X)             \
  X(nvmlDeviceGetRemappedRows)                 \
  X(nvmlDeviceGetRetiredPagesPendingStatus)    \
  X(nvmlDeviceGetCurrPcieLinkGeneration)       \
  X(nvmlDeviceGetMaxPcieLinkGeneration)        \
  X(nvmlDeviceGetCurrPcieLinkWidth)            \
  X(nvmlDeviceGetMaxPcieLinkWidth)             \
  X(nvmlDeviceGetCurrentClocksThrottleReasons) \
  X(nvmlDeviceGetFieldValues)

// Per-cgroup GPU memory limits (R615 / CUDA 13.4): optional; without them
// HasMemoryLimits() is false and the calls are Unimplemented.
#define GDP_NVML_MEMORY_LIMIT_SYMBOLS(X) \
  X(nvmlDeviceSetMemoryLimits_v1)        \
  X(nvmlDeviceGetMemoryLimits_v1)

struct NvmlSymbols {
#define GDP_NVML_FIELD(name) Fn_##name name = nullptr;
  GDP_NVML_SYMBOLS(GDP_NVML_FIELD)
  GDP_NVML_MIG_SYMBOLS(GDP_NVML_FIELD)
  GDP_NVML_MIG_MAKE_SYMBOLS(GDP_NVML_FIELD)
  GDP_NVML_WAIT_SYMBOLS(GDP_NVML_FIELD)
  GDP_NVML_TOPOLOGY_SYMBOLS(GDP_NVML_FIELD)
  GDP_NVML_IDENTITY_SYMBOLS(GDP_NVML_FIELD)
  GDP_NVML_HEALTH_SYMBOLS(GDP_NVML_FIELD)
  GDP_NVML_MEMORY_LIMIT_SYMBOLS(GDP_NVML_FIELD)
#undef GDP_NVML_FIELD
};

template <typename F>
absl::Status Nvml::Guarded(const char* call, nvmlDevice_t a, nvmlDevice_t b,
                           F&& f, absl::Duration extra) const {
  NvmlCallScope scope(gate_, call, a, b, extra);
  if (!scope.status().ok()) return scope.status();
  return Check(f(), call);
}

template <typename Fn, typename Handle, typename... Args>
absl::Status Nvml::CallOptional(Fn fn, const char* call, Handle handle,
                                Args... args) const {
  if (fn == nullptr) {
    absl::Status s(
        absl::StatusCode::kUnimplemented,
        absl::StrCat(call, ": not in ", library_path_, " (driver too old?)"));
    s.SetPayload(kNvmlPayloadUrl, absl::Cord(absl::StrCat(static_cast<int>(
                                      NVML_ERROR_FUNCTION_NOT_FOUND))));
    return s;
  }
  // A GPU instance handle is a key of its own, as a device handle is.
  static_assert(std::is_pointer_v<Handle>);
  return Guarded(call, reinterpret_cast<nvmlDevice_t>(handle), nullptr,
                 [&] { return fn(handle, args...); });
}

}  // namespace gdp

#endif  // GDP_NVML_NVML_INTERNAL_H_
