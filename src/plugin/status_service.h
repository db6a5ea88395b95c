// Our own DeviceStatus gRPC service (proto/status/v1) for one resource: the
// health, the reason and the physical unit of each device, which the
// kubelet's API cannot carry. Served on the same socket as the DevicePlugin
// service; a thin edge from a DeviceSet snapshot to the wire.
#ifndef GDP_PLUGIN_STATUS_SERVICE_H_
#define GDP_PLUGIN_STATUS_SERVICE_H_

#include <string>

#include "device/device_set.h"
#include "rpc/async_call.h"
#include "rpc/socket_server.h"
#include "status/v1/status.grpc.pb.h"

namespace gdp {

// Thread-safe (answers run on the server's thread). A new instance is made
// for each server start; `devices` must outlive it.
class DeviceStatusService final : public RpcService {
 public:
  DeviceStatusService(const DeviceSet& devices, std::string resource_name);

  grpc::Service* grpc_service() override { return &service_; }
  void Arm(CallQueue& queue) override;

  // Answers at once from a snapshot of the devices; never fails.
  grpc::Status List(const status::v1::ListRequest& req,
                    status::v1::ListResponse* resp);

 private:
  const DeviceSet& devices_;
  const std::string resource_name_;
  status::v1::DeviceStatus::AsyncService service_;
  const UnaryMethod<status::v1::ListRequest, status::v1::ListResponse> list_m_;
};

}  // namespace gdp

#endif  // GDP_PLUGIN_STATUS_SERVICE_H_
