// What the health monitor's tests share: the watched form of a GPU as
// discovery finds it, and the devices whose health they ask.
#ifndef GDP_HEALTH_MONITOR_TESTING_H_
#define GDP_HEALTH_MONITOR_TESTING_H_

#include <string>

#include "device/device.h"
#include "health/monitor.h"
#include "nvml/nvml.h"

namespace gdp {

// GPU `ref` with the MIG devices NVML lists under it now.
inline WatchedGpu WatchedAsDiscovered(const Nvml& nvml, const GpuRef& ref) {
  WatchedGpu w{ref, {}};
  nvmlDevice_t gpu = *nvml.DeviceByIndex(ref.index);
  absl::StatusOr<unsigned> max = nvml.MaxMigDeviceCount(gpu);
  for (unsigned j = 0; max.ok() && j < *max; ++j) {
    absl::StatusOr<nvmlDevice_t> mig = nvml.MigDeviceByIndex(gpu, j);
    if (!mig.ok()) continue;
    w.migs.push_back(
        {*nvml.GpuInstanceId(*mig), *nvml.ComputeInstanceId(*mig)});
  }
  return w;
}

// The device of whole GPU `ref` (a replica of it when `replica` >= 0).
inline Device GpuDevice(const GpuRef& ref, int replica = -1) {
  Device d;
  d.id = ref.uuid + (replica < 0 ? "" : "::" + std::to_string(replica));
  d.gpu_uuid = ref.uuid;
  d.gpu_index = ref.index;
  d.replica = replica;
  return d;
}

// The device of the MIG device of GPU `ref` with GPU instance `gi` and
// compute instance `ci`.
inline Device MigDevice(const GpuRef& ref, int gi, int ci) {
  Device d = GpuDevice(ref);
  d.id = "MIG-" + std::to_string(gi);
  d.mig_gi = gi;
  d.mig_ci = ci;
  return d;
}

}  // namespace gdp

#endif  // GDP_HEALTH_MONITOR_TESTING_H_
