// Our own DeviceStatus gRPC service (proto/status/v1) for one resource: the
// health, the reason and the physical unit of each device, which the
// kubelet's API cannot carry. Served on the same socket as the DevicePlugin
// service; a thin edge from a DeviceSet snapshot to the wire.
#ifndef GDP_PLUGIN_STATUS_SERVICE_H_
#define GDP_PLUGIN_STATUS_SERVICE_H_

#include <string>

#include "device/device_set.h"
#include "status/v1/status.grpc.pb.h"

namespace gdp {

// Thread-safe (gRPC calls it from its own threads). A new instance is made
// for each server start; `devices` must outlive it.
class DeviceStatusService final
    : public status::v1::DeviceStatus::CallbackService {
 public:
  DeviceStatusService(const DeviceSet& devices, std::string resource_name);

  // Answers at once from a snapshot of the devices; never fails.
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* ctx,
                                 const status::v1::ListRequest* req,
                                 status::v1::ListResponse* resp) override;

 private:
  const DeviceSet& devices_;
  const std::string resource_name_;
};

}  // namespace gdp

#endif  // GDP_PLUGIN_STATUS_SERVICE_H_
