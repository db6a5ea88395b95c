// The kubelet-facing DevicePlugin gRPC service for one resource: a thin edge
// that converts requests to our model, asks the Allocator, and converts back.
#ifndef GDP_PLUGIN_SERVICE_H_
#define GDP_PLUGIN_SERVICE_H_

#include <atomic>
#include <memory>
#include <string>

#include "config/config.h"
#include "device/device_set.h"
#include "metrics/registry.h"
#include "plugin/allocator.h"
#include "rpc/async_call.h"
#include "rpc/device_stream.h"
#include "rpc/socket_server.h"
#include "topology/node_topology.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp {

// What the service's answers depend on besides the devices and the
// Allocator.
struct ServiceOptions {
  // How GetPreferredAllocation places replicas on physical units.
  SharedAllocationPolicy shared_allocation_policy =
      SharedAllocationPolicy::kDistributed;
  // The node's GPU topology for GetPreferredAllocation, read on each call
  // (so a rediscovered topology applies without a restart); null or empty:
  // NUMA only.
  std::shared_ptr<const SharedTopology> topology;
  // The resource served: the label of its metrics (PluginMetrics).
  std::string resource_name;
  // When not null, counts the ListAndWatch streams open now (the kubelet
  // holds one while it is alive and we are registered).
  std::shared_ptr<std::atomic<int>> open_streams;
};

// Thread-safe (its answers run on the server's thread; nothing else is
// shared). A new instance is made for each server start; `devices` and
// `allocator` must outlive it.
class DevicePluginService final : public RpcService {
 public:
  DevicePluginService(DeviceSet& devices, const Allocator& allocator,
                      ServiceOptions options = {});

  grpc::Service* grpc_service() override { return &service_; }
  void Arm(CallQueue& queue) override;

  grpc::Status GetDevicePluginOptions(const v1beta1::Empty& req,
                                      v1beta1::DevicePluginOptions* resp);

  // Answers each container request with PreferredAllocation under
  // options.shared_allocation_policy and the current options.topology;
  // an invalid one fails the whole call with INVALID_ARGUMENT naming the
  // container request.
  grpc::Status GetPreferredAllocation(
      const v1beta1::PreferredAllocationRequest& req,
      v1beta1::PreferredAllocationResponse* resp);

  // Refuses the whole request (INVALID_ARGUMENT or FAILED_PRECONDITION,
  // naming the container and device) if any container's request is bad.
  grpc::Status Allocate(const v1beta1::AllocateRequest& req,
                        v1beta1::AllocateResponse* resp);

  grpc::Status PreStartContainer(const v1beta1::PreStartContainerRequest& req,
                                 v1beta1::PreStartContainerResponse* resp);

 private:
  // ListAndWatch: the whole list at once and again after every change,
  // until the client cancels or the server shuts down (which cancels the
  // stream).
  DeviceStreamMethod<v1beta1::Empty, v1beta1::ListAndWatchResponse>
  ListAndWatchMethod();

  DeviceSet& devices_;
  const Allocator& allocator_;
  const ServiceOptions options_;
  // This resource's children of PluginMetrics, looked up once.
  metrics::Counter& allocations_;
  metrics::Counter& allocated_devices_;
  metrics::Histogram& allocate_duration_;
  metrics::Histogram& preferred_duration_;

  v1beta1::DevicePlugin::AsyncService service_;
  const UnaryMethod<v1beta1::Empty, v1beta1::DevicePluginOptions> options_m_;
  const DeviceStreamMethod<v1beta1::Empty, v1beta1::ListAndWatchResponse>
      list_and_watch_m_;
  const UnaryMethod<v1beta1::PreferredAllocationRequest,
                    v1beta1::PreferredAllocationResponse>
      preferred_m_;
  const UnaryMethod<v1beta1::AllocateRequest, v1beta1::AllocateResponse>
      allocate_m_;
  const UnaryMethod<v1beta1::PreStartContainerRequest,
                    v1beta1::PreStartContainerResponse>
      pre_start_m_;
};

}  // namespace gdp

#endif  // GDP_PLUGIN_SERVICE_H_
