// Which kubelet API serves which GPU (--device-api, dra.devices): the node's
// GPUs split between the device plugin and the DRA side, so that no GPU or
// MIG device is ever offered by both (the scheduler would admit a pod twice
// on it). Pure: no NVML, no Kubernetes.
#ifndef GDP_RESOURCES_DEVICE_API_H_
#define GDP_RESOURCES_DEVICE_API_H_

#include "absl/status/statusor.h"
#include "config/config.h"
#include "device/gpu.h"

namespace gdp {

// The node's GPUs as each API serves them. Both keep the node's driver and
// CUDA versions; `unusable` stays with the device plugin part.
struct DeviceApiSplit {
  // What the device plugin builds its resources from (BuildResources).
  NodeGpus device_plugin;
  // What the DRA side publishes: whole GPUs, and for a MIG-enabled GPU the
  // MIG devices DRA serves (all of them when the GPU was named whole).
  NodeGpus dra;
};

// Splits `node` by config.device_api and config.dra.devices:
//   device-plugin: every GPU to the device plugin, none to DRA;
//   dra: the GPUs and MIG devices dra.devices names (all when absent) to
//        DRA, nothing to the device plugin;
//   both: dra.devices to DRA, everything else to the device plugin; a GPU
//        with some MIG devices named goes to both, each getting its own
//        MIG devices.
// dra.devices as sharing's devices: `all`, the first N GPUs by index, or a
// list of GPU indices and UUIDs (the whole GPU) and MIG indices "i:j" and
// UUIDs (one MIG device). A reference that names nothing on this node is
// logged and skipped, so one config can serve different nodes.
// REQUIRES: Validate(config).ok().
// With feature gate DynamicMIG, a MIG-enabled GPU DRA serves is DRA's alone
// (it partitions it on demand): dra.devices must name it whole or none of
// it.
// Result on failure: InvalidArgument naming the GPU and the setting when a
// unit would be offered by both APIs: a MIG device of a GPU the device
// plugin offers whole (MIG strategy none), some but not all of a
// MIG-enabled GPU with DynamicMIG (either device API), or a sharing entry
// listing a GPU or MIG device that DRA serves.
absl::StatusOr<DeviceApiSplit> SplitDeviceApis(const NodeGpus& node,
                                               const Config& config);

}  // namespace gdp

#endif  // GDP_RESOURCES_DEVICE_API_H_
