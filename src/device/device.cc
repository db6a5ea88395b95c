#include "device/device.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace gdp {

DeviceList::DeviceList(std::vector<Device> devs, uint64_t gen)
    : devices(std::move(devs)), generation(gen) {
  by_id.reserve(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) by_id.emplace(devices[i].id, i);
}

const Device* DeviceList::Find(const std::string& id) const {
  auto it = by_id.find(id);
  return it == by_id.end() ? nullptr : &devices[it->second];
}

bool Device::SameDefinition(const Device& o) const {
  return id == o.id && visible_id == o.visible_id &&
         device_nodes == o.device_nodes && numa_node == o.numa_node &&
         gpu_index == o.gpu_index && gpu_uuid == o.gpu_uuid &&
         mig_gi == o.mig_gi && mig_ci == o.mig_ci && replica == o.replica &&
         memory_bytes == o.memory_bytes;
}

std::vector<Device> GpuDevices(const NodeGpus& node, DeviceIdStrategy ids) {
  std::vector<Device> out;
  out.reserve(node.gpus.size());
  for (const GpuInfo& g : node.gpus) {
    Device d;
    d.id = ids == DeviceIdStrategy::kUuid ? g.uuid : absl::StrCat(g.index);
    d.visible_id = d.id;
    d.device_nodes.push_back(absl::StrCat("/dev/nvidia", g.minor));
    d.numa_node = g.numa_node;
    d.gpu_index = g.index;
    d.gpu_uuid = g.uuid;
    d.memory_bytes = g.memory_bytes;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace gdp
