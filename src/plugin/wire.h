// Conversions between our model and the kubelet's v1beta1 wire types. The
// only place, with service.cc and registrar.cc, that knows the protobufs.
#ifndef GDP_PLUGIN_WIRE_H_
#define GDP_PLUGIN_WIRE_H_

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "device/device.h"
#include "plugin/allocator.h"
#include "v1beta1/api.pb.h"

namespace gdp {

// The kubelet's health strings.
inline constexpr char kHealthy[] = "Healthy";
inline constexpr char kUnhealthy[] = "Unhealthy";

// The full device list; topology only for devices with a known NUMA node.
void ToWire(const DeviceList& list, v1beta1::ListAndWatchResponse* out);

// Envs, mounts, device specs, annotations and CDI devices, in our order.
void ToWire(const ContainerAllocation& alloc,
            v1beta1::ContainerAllocateResponse* out);

// Same code and message.
grpc::Status ToGrpc(const absl::Status& status);

}  // namespace gdp

#endif  // GDP_PLUGIN_WIRE_H_
