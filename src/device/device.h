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

// What made a device unhealthy, for whoever classes it by kind (the DRA
// side's device taints); the reason text says the rest.
struct HealthCause {
  enum class Kind {
    kNone,      // healthy
    kXid,       // an XID event (`xid`)
    kEcc,       // an uncorrectable (double-bit) ECC error
    kLost,      // the GPU fell off the bus
    kNvml,      // NVML failed (or hung) as a whole, for this GPU or MIG device
    kNvLink,    // an NVLink went inactive (--nvlink-down-unhealthy)
    kFlapping,  // reset after failing repeatedly, held for a while
  };
  Kind kind = Kind::kNone;
  uint64_t xid = 0;  // for kXid
  bool operator==(const HealthCause&) const = default;
};

// One schedulable unit: a GPU, a MIG device, or one replica of either.
// Health can go back to healthy.
struct Device {
  std::string id;  // as advertised ("GPU-..", "3", "MIG-..", "0:1", "<x>::4")
  // The physical unit's ID (replica suffix stripped): what
  // NVIDIA_VISIBLE_DEVICES names, and the device's name in our CDI spec.
  // Replicas of one unit share it.
  std::string visible_id;
  // Container paths of the unit's own nodes: "/dev/nvidia3", and for a MIG
  // device also "/dev/nvidia-caps/nvidia-capN" of its GPU and compute
  // instance.
  std::vector<std::string> device_nodes;
  int numa_node = -1;  // -1: unknown, no topology sent
  Health health = Health::kHealthy;
  std::string unhealthy_reason;  // empty while healthy
  HealthCause unhealthy_cause;   // kNone while healthy

  unsigned gpu_index = 0;     // the physical GPU (a MIG device's parent)
  std::string gpu_uuid;       // the physical GPU's UUID
  int mig_gi = -1;            // GPU instance ID; -1: a whole GPU
  int mig_ci = -1;            // compute instance ID; -1: a whole GPU
  int replica = -1;           // k of "<visible_id>::<k>"; -1: not replicated
  uint64_t memory_bytes = 0;  // of the unit (GPU or MIG device)

  // Same definition (everything but health).
  bool SameDefinition(const Device& o) const;
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
// (MIG devices and replicas are made by resources/.)
std::vector<Device> GpuDevices(const NodeGpus& node, DeviceIdStrategy ids);

}  // namespace gdp

#endif  // GDP_DEVICE_DEVICE_H_
