// The calls the kubelet makes on a registered device plugin, as an interface
// so the kubelet-side state (DeviceManager) needs no gRPC and can be tested
// with a fake.
#ifndef GDP_DPCTL_DEVICE_PLUGIN_API_H_
#define GDP_DPCTL_DEVICE_PLUGIN_API_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "v1beta1/api.pb.h"

namespace gdp::dpctl {

// Implementations must be thread-safe. A failed call returns the plugin's
// (or the transport's) status.
class DevicePluginApi {
 public:
  virtual ~DevicePluginApi() = default;
  virtual absl::StatusOr<v1beta1::PreferredAllocationResponse>
  GetPreferredAllocation(
      const v1beta1::PreferredAllocationRequest& request) = 0;
  virtual absl::StatusOr<v1beta1::AllocateResponse> Allocate(
      const v1beta1::AllocateRequest& request) = 0;
  virtual absl::Status PreStartContainer(
      const v1beta1::PreStartContainerRequest& request) = 0;
  // Makes calls in progress, and every later call, fail with CANCELLED.
  // Idempotent.
  virtual void Cancel() = 0;
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DEVICE_PLUGIN_API_H_
