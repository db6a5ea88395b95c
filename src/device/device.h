// The devices a plugin advertises to the kubelet, in our own terms. The
// kubelet's wire types appear only at the gRPC edge (plugin/service.cc).
#ifndef GDP_DEVICE_DEVICE_H_
#define GDP_DEVICE_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "device/gpu.h"

namespace gdp {

enum class Health { kHealthy, kUnhealthy };

// One schedulable unit. Health can go back to healthy.
struct Device {
  std::string id;          // as advertised; at most 63 characters
  std::string visible_id;  // what NVIDIA_VISIBLE_DEVICES names for it
  std::vector<std::string> device_nodes;  // e.g. "/dev/nvidia3"
  int numa_node = -1;                     // -1: unknown, no topology sent
  Health health = Health::kHealthy;
  std::string unhealthy_reason;  // empty while healthy
};

// An immutable device list with an index by ID. Shared by pointer so that
// readers (Allocate, ListAndWatch) never copy it and never block writers.
struct DeviceList {
  explicit DeviceList(std::vector<Device> devices, uint64_t generation = 0);

  // The device with this ID, or nullptr.
  const Device* Find(const std::string& id) const;

  std::vector<Device> devices;
  absl::flat_hash_map<std::string, size_t> by_id;
  uint64_t generation;  // increases with every change of the set
};

enum class DeviceIdStrategy { kUuid, kIndex };

// One device per GPU: ID = UUID or index, node /dev/nvidia<minor>.
std::vector<Device> GpuDevices(const NodeGpus& node, DeviceIdStrategy ids);

}  // namespace gdp

#endif  // GDP_DEVICE_DEVICE_H_
