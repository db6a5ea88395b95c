// What a container needs to use a set of devices, decided from our device
// model. Converted to the kubelet's AllocateResponse at the gRPC edge.
#ifndef GDP_PLUGIN_ALLOCATOR_H_
#define GDP_PLUGIN_ALLOCATOR_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "device/device.h"

namespace gdp {

struct DeviceSpecEdit {
  std::string container_path;
  std::string host_path;
  std::string permissions;  // "rw"
};

struct ContainerAllocation {
  std::map<std::string, std::string> envs;
  std::vector<DeviceSpecEdit> device_specs;
};

struct AllocatorOptions {
  bool pass_device_specs = false;
  std::string dev_root = "/";  // host root of /dev/nvidia*
  bool operator==(const AllocatorOptions&) const = default;
};

// Thread-safe: immutable after construction.
class Allocator {
 public:
  // Looks once for the control nodes (/dev/nvidiactl, /dev/nvidia-uvm,
  // /dev/nvidia-uvm-tools, /dev/nvidia-modeset) under options.dev_root;
  // those present are passed with every allocation.
  explicit Allocator(AllocatorOptions options);

  // The container edits for one container asking for `ids`.
  // Result on failure: InvalidArgument for an empty request, an unknown ID
  // or an ID named twice; FailedPrecondition for an unhealthy device. The
  // message names the offending ID.
  absl::StatusOr<ContainerAllocation> Allocate(
      const DeviceList& list, const std::vector<std::string>& ids) const;

  const std::vector<std::string>& control_nodes() const {
    return control_nodes_;
  }

 private:
  std::string HostPath(const std::string& container_path) const;

  AllocatorOptions options_;
  std::vector<std::string> control_nodes_;  // container paths found
};

}  // namespace gdp

#endif  // GDP_PLUGIN_ALLOCATOR_H_
