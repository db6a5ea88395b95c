// libFuzzer target: the device plugin's request handling on a device list.
// The input is an AllocateRequest or a PreferredAllocationRequest in
// protobuf wire format (the first byte picks which), answered by
// DevicePluginService as the kubelet's call would be, against 4 GPUs shared
// 3 ways (replicas, so the replica chooser runs too).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/device_set.h"
#include "plugin/allocator.h"
#include "plugin/service.h"

namespace {

std::vector<gdp::Device> Devices() {
  std::vector<gdp::Device> out;
  for (unsigned gpu = 0; gpu < 4; ++gpu) {
    for (int r = 0; r < 3; ++r) {
      gdp::Device d;
      d.visible_id = "GPU-" + std::to_string(gpu);
      d.id = d.visible_id + "::" + std::to_string(r);
      d.device_nodes = {"/dev/nvidia" + std::to_string(gpu)};
      d.gpu_index = gpu;
      d.gpu_uuid = d.visible_id;
      d.replica = r;
      d.numa_node = static_cast<int>(gpu / 2);
      if (gpu == 3) {
        d.health = gdp::Health::kUnhealthy;
        d.unhealthy_reason = "XID 79";
      }
      out.push_back(d);
    }
  }
  return out;
}

struct Served {
  Served() : devices(Devices()), allocator(gdp::AllocatorOptions{}) {
    gdp::ServiceOptions o;
    o.resource_name = "nvidia.com/gpu";
    service = std::make_unique<gdp::DevicePluginService>(devices, allocator, o);
  }
  gdp::DeviceSet devices;
  gdp::Allocator allocator;
  std::unique_ptr<gdp::DevicePluginService> service;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Served* served = new Served();  // kept for the whole run
  if (size == 0) return 0;
  const bool preferred = (data[0] & 1) != 0;
  if (preferred) {
    v1beta1::PreferredAllocationRequest req;
    if (!req.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
    v1beta1::PreferredAllocationResponse resp;
    (void)served->service->GetPreferredAllocation(req, &resp);
  } else {
    v1beta1::AllocateRequest req;
    if (!req.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
    v1beta1::AllocateResponse resp;
    (void)served->service->Allocate(req, &resp);
  }
  return 0;
}
