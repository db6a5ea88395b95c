#include "plugin/status_service.h"

#include <memory>
#include <utility>

#include "plugin/wire.h"

namespace gdp {
namespace {

// The status of every device of `list`, in its order.
void ToStatus(const DeviceList& list, const std::string& resource_name,
              status::v1::ListResponse* out) {
  out->set_resource_name(resource_name);
  out->mutable_devices()->Reserve(static_cast<int>(list.devices.size()));
  for (const Device& d : list.devices) {
    status::v1::Device* w = out->add_devices();
    w->set_id(d.id);
    w->set_health(d.health == Health::kHealthy ? kHealthy : kUnhealthy);
    w->set_reason(d.unhealthy_reason);
    if (d.numa_node >= 0) w->set_numa_node(d.numa_node);
    w->set_visible_id(d.visible_id);
    w->set_gpu_index(d.gpu_index);
    w->set_gpu_uuid(d.gpu_uuid);
    if (d.mig_gi >= 0) w->set_mig_gi(d.mig_gi);
    if (d.mig_ci >= 0) w->set_mig_ci(d.mig_ci);
    if (d.replica >= 0) w->set_replica(d.replica);
  }
}

}  // namespace

DeviceStatusService::DeviceStatusService(const DeviceSet& devices,
                                         std::string resource_name)
    : devices_(devices),
      resource_name_(std::move(resource_name)),
      list_m_(Unary(
          &service_, &status::v1::DeviceStatus::AsyncService::RequestList,
          [this](const auto& req, auto* resp) { return List(req, resp); })) {}

void DeviceStatusService::Arm(CallQueue& queue) {
  UnaryCall<status::v1::ListRequest, status::v1::ListResponse>::Arm(list_m_,
                                                                    queue);
}

grpc::Status DeviceStatusService::List(const status::v1::ListRequest&,
                                       status::v1::ListResponse* resp) {
  std::shared_ptr<const DeviceList> list = devices_.Get();
  ToStatus(*list, resource_name_, resp);
  return grpc::Status::OK;
}

}  // namespace gdp
