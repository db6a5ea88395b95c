// Which resources the node advertises and which devices each holds, decided
// from what discovery found and the config: MIG strategy, resource name
// patterns, time-slicing and MPS replicas. Pure: no NVML, no Kubernetes.
#ifndef GDP_RESOURCES_RESOURCES_H_
#define GDP_RESOURCES_RESOURCES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "device/device.h"
#include "device/gpu.h"
#include "device/mig_caps.h"

namespace gdp {

// One extended resource and the devices it advertises.
struct Resource {
  std::string name;         // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
  std::string socket_name;  // "nvidia-gpu.sock", "nvidia-mig-1g.10gb.sock"
  SharingStrategy sharing = SharingStrategy::kNone;
  int replicas = 1;  // replicas per shared unit; 1 when not shared
  bool fail_requests_greater_than_one = false;
  // sharing.*.resources[].memoryPerReplica: each replica's memory share on
  // its GPU, bytes (whole MiB); 0: none.
  uint64_t memory_per_replica = 0;
  std::vector<Device> devices;

  // Same name, sharing and devices (health aside).
  bool SameDefinition(const Resource& o) const;
};

// "nvidia.com/mig-1g.10gb" -> "nvidia-mig-1g.10gb.sock".
std::string SocketNameFor(const std::string& resource_name);

// The resources to advertise, sorted by name; resources without devices are
// left out.
//
// MIG strategy none: every GPU is a device, MIG mode ignored. single: every
// MIG device is an nvidia.com/gpu device; refused unless every GPU has MIG
// enabled with devices of one profile (a node with no MIG-enabled GPU falls
// back to whole GPUs). mixed: GPUs without MIG as with none, MIG devices as
// nvidia.com/mig-<profile>. Names come from config.gpu_resources /
// mig_resources when given (first matching pattern; unmatched devices are
// not advertised). Sharing then replaces the chosen devices of a resource by
// `replicas` replicas each, under the resource's name, its rename, or
// <name>.shared with renameByDefault; unchosen devices stay as they were.
//
// A MIG device's nodes are its GPU's /dev/nvidia<minor> and
// /dev/nvidia-caps/nvidia-cap<N> of its GPU instance and compute instance,
// N from `mig_caps` (may be null when no MIG device is advertised).
//
// REQUIRES: Validate(config).ok().
// Result on failure: InvalidArgument naming the GPU, profile or config field
// (MIG single on a mixed node, MPS on MIG devices or too many MPS replicas,
// a rename that collides with another resource, a memoryPerReplica on MIG
// devices, whose memory cannot be limited, or larger than a shared GPU's
// memory divided by its replicas) or NotFound naming a
// missing MIG capability minor (or FailedPrecondition without `mig_caps`).
absl::StatusOr<std::vector<Resource>> BuildResources(const NodeGpus& node,
                                                     const Config& config,
                                                     const MigCaps* mig_caps);

}  // namespace gdp

#endif  // GDP_RESOURCES_RESOURCES_H_
