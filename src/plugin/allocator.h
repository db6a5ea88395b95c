// What a container needs to use a set of devices, decided from our device
// model. Converted to the kubelet's AllocateResponse at the gRPC edge.
#ifndef GDP_PLUGIN_ALLOCATOR_H_
#define GDP_PLUGIN_ALLOCATOR_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "device/device.h"

namespace gdp {

// Where the volume-mounts strategy points NVIDIA_VISIBLE_DEVICES; one
// /dev/null mount per device sits under it.
inline constexpr char kVolumeMountsRoot[] = "/var/run/nvidia-container-devices";
// The CDI kind of our devices, and the plugin name in CDI annotation keys.
inline constexpr char kCdiKind[] = "k8s.device-plugin.nvidia.com/gpu";
inline constexpr char kCdiAnnotationPlugin[] = "nvidia-device-plugin";

struct DeviceSpecEdit {
  std::string container_path;
  std::string host_path;
  std::string permissions;  // "rw"
};

struct MountEdit {
  std::string container_path;
  std::string host_path;
  bool read_only = false;
};

struct ContainerAllocation {
  std::map<std::string, std::string> envs;
  std::vector<MountEdit> mounts;
  std::vector<DeviceSpecEdit> device_specs;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;  // qualified: "<kind>=<name>"
};

// What an Allocate answer depends on. Checked by Validate(Config) upstream;
// see the REQUIRES on Allocator's constructor.
struct AllocatorOptions {
  bool pass_device_specs = false;
  std::string dev_root = "/";  // host root of /dev/nvidia*
  // How the devices are named to the container runtime; several at once
  // as NVIDIA allows (volume-mounts' NVIDIA_VISIBLE_DEVICES wins over
  // envvar's when both are given).
  std::vector<DeviceListStrategy> strategies = {DeviceListStrategy::kEnvvar};
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  std::string cdi_kind = kCdiKind;
  // The resource served, e.g. "nvidia.com/gpu": named in errors and in the
  // MPS pipe directory (/mps/nvidia.com/gpu/pipe).
  std::string resource_name = "nvidia.com/gpu";
  SharingStrategy sharing = SharingStrategy::kNone;
  // Replicas per physical unit under sharing (the MPS limits divide by it).
  int replicas = 0;
  // Refuse a container request for more than one device when any of them
  // is a replica (sharing.*.failRequestsGreaterThanOne).
  bool fail_requests_greater_than_one = false;
  // Host directory of the MPS control daemon: <mps_root>/<resource>/pipe
  // and <mps_root>/shm. Used only when sharing is kMps.
  std::string mps_root;
  // sharing.*.resources[].memoryPerReplica (bytes, whole MiB; 0: none) and
  // the hook that applies it (--memory-limit-hook): kOurs names the
  // replicas' CDI devices, kNvidia puts NVIDIA's env.
  uint64_t memory_per_replica = 0;
  MemoryLimitHookKind memory_limit_hook = MemoryLimitHookKind::kOurs;
  bool operator==(const AllocatorOptions&) const = default;
};

// Thread-safe: immutable after construction.
class Allocator {
 public:
  // Looks once for the control nodes (/dev/nvidiactl, /dev/nvidia-uvm,
  // /dev/nvidia-uvm-tools, /dev/nvidia-modeset) under options.dev_root;
  // those present are passed with every allocation that carries device
  // specs.
  // REQUIRES: options.strategies is not empty; with sharing kMps,
  // mps_root is not empty and replicas >= 2 (Validate(Config) ensures it).
  explicit Allocator(AllocatorOptions options);

  // The container edits for one container asking for `ids`. Replicas name
  // their physical unit (visible_id) once, in request order:
  //   envvar:          NVIDIA_VISIBLE_DEVICES=<unit>,<unit>..
  //   volume-mounts:   NVIDIA_VISIBLE_DEVICES=kVolumeMountsRoot and one
  //                    mount /dev/null -> kVolumeMountsRoot/<unit> per unit
  //   cdi-annotations: <prefix>nvidia-device-plugin_<random UUID> =
  //                    "<cdi_kind>=<name>,.." (a new key for each answer)
  //   cdi-cri:         cdi_devices "<cdi_kind>=<name>"..
  //   where <name> is the unit, once, except for replicas with a share
  //   (memory_per_replica > 0 and kOurs): each such replica is named by
  //   its own ID ("<unit>::<k>"), the CDI device whose hook entry carries
  //   its share (--share; the daemon's CDI spec), so a container given k
  //   replicas of a GPU holds k shares, which the hook adds up.
  //   pass_device_specs (only with envvar or volume-mounts among the
  //   strategies): control nodes, then each unit's device_nodes, once
  //   each; host path dev_root + path, "rw".
  //   MPS (any strategy): CUDA_MPS_PIPE_DIRECTORY=/mps/<resource>/pipe,
  //   mounts <mps_root>/<resource>/pipe -> /mps/<resource>/pipe and
  //   <mps_root>/shm -> /dev/shm; when the request holds replicas, the
  //   share of k replicas of a unit: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=
  //   k*100/replicas (rounded down, as NVIDIA's 100/replicas; one value
  //   per client, so the smallest k among the container's units) and
  //   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="<ordinal>=<MiB>M,.." with k times
  //   memory_per_replica, or without one k*memory/replicas, where ordinal
  //   is the unit's position, by GPU index, among the container's
  //   replicated units (as CUDA numbers them in the container); units of
  //   unknown memory are left out.
  //   memory_per_replica > 0 with kNvidia (any sharing): NVIDIA's hook
  //   env for k*memory_per_replica on each replicated GPU (k: its
  //   replicas in the request), cdi::NvidiaAllocateLimitEnv's entries
  //   NVIDIA_GPU_MEMORY_LIMIT=<MiB>, NVIDIA_GPU_MEMORY_REQUEST=0; the
  //   pod's own env can override them. kOurs puts no limit in the env.
  // With only cdi-* strategies there is no NVIDIA_VISIBLE_DEVICES, no
  // /dev/null mount and no device spec (NVIDIA's behaviour).
  // Result on failure: InvalidArgument for an empty request, an unknown
  // ID, an ID named twice, or more than one device including a replica when
  // fail_requests_greater_than_one, or with kNvidia replicated GPUs whose
  // limits differ (NVIDIA's hook has one limit per container);
  // FailedPrecondition for an unhealthy device. The message names the offending
  // ID (or resource and count).
  absl::StatusOr<ContainerAllocation> Allocate(
      const DeviceList& list, const std::vector<std::string>& ids) const;

  const std::vector<std::string>& control_nodes() const {
    return control_nodes_;
  }

 private:
  bool Uses(DeviceListStrategy s) const;
  std::string HostPath(const std::string& container_path) const;
  void AddMps(const std::vector<const Device*>& devices,
              ContainerAllocation& out) const;
  absl::Status AddMemoryLimits(const std::vector<const Device*>& devices,
                               ContainerAllocation& out) const;
  // Whether replica `d` is named by its own CDI device (a share).
  bool ReplicaCdiDevice(const Device& d) const;

  AllocatorOptions options_;
  bool any_non_cdi_ = false;  // envvar or volume-mounts among strategies
  std::vector<std::string> control_nodes_;  // container paths found
};

}  // namespace gdp

#endif  // GDP_PLUGIN_ALLOCATOR_H_
