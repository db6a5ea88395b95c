#include "plugin/wire.h"

#include <string>

namespace gdp {

void ToWire(const DeviceList& list, v1beta1::ListAndWatchResponse* out) {
  out->mutable_devices()->Reserve(static_cast<int>(list.devices.size()));
  for (const Device& d : list.devices) {
    v1beta1::Device* w = out->add_devices();
    w->set_id(d.id);
    w->set_health(d.health == Health::kHealthy ? kHealthy : kUnhealthy);
    if (d.numa_node >= 0) {
      w->mutable_topology()->add_nodes()->set_id(d.numa_node);
    }
  }
}

void ToWire(const ContainerAllocation& alloc,
            v1beta1::ContainerAllocateResponse* out) {
  for (const auto& [k, v] : alloc.envs) (*out->mutable_envs())[k] = v;
  for (const MountEdit& mount : alloc.mounts) {
    v1beta1::Mount* w = out->add_mounts();
    w->set_container_path(mount.container_path);
    w->set_host_path(mount.host_path);
    w->set_read_only(mount.read_only);
  }
  for (const DeviceSpecEdit& spec : alloc.device_specs) {
    v1beta1::DeviceSpec* w = out->add_devices();
    w->set_container_path(spec.container_path);
    w->set_host_path(spec.host_path);
    w->set_permissions(spec.permissions);
  }
  for (const auto& [k, v] : alloc.annotations) {
    (*out->mutable_annotations())[k] = v;
  }
  for (const std::string& name : alloc.cdi_devices) {
    out->add_cdi_devices()->set_name(name);
  }
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace gdp
