// What goes into this node's ResourceSlices: each published device with the
// taints its health calls for, cut into slices no larger than the API
// server accepts. Pure; the JSON is made in slice_json.h.
#ifndef GDP_DRA_SLICES_H_
#define GDP_DRA_SLICES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "device/device.h"
#include "dra/inventory.h"

namespace gdp::dra {

// A device taint (resource.k8s.io/v1 DeviceTaint, without timeAdded, which
// the publisher carries over from the published slice).
struct Taint {
  std::string key;    // "gpu.nvidia.com/xid"
  std::string value;  // "79", or empty
  std::string effect = "NoSchedule";
  bool operator==(const Taint&) const = default;
};

// One device of a slice.
struct SliceDevice {
  std::string name;
  std::map<std::string, AttributeValue> attributes;
  std::map<std::string, uint64_t> capacity;
  // allowMultipleAllocations, and capacities' requestPolicy by name
  // (DraDevice's).
  bool allow_multiple_allocations = false;
  std::map<std::string, RequestPolicy> request_policies;
  std::vector<Taint> taints;
  bool operator==(const SliceDevice&) const = default;
};

// The taints of a device with this health, keys in the driver's domain
// ("<driver>/..."), all NoSchedule:
//   an XID                  <driver>/xid = the XID (as NVIDIA's driver)
//   the GPU lost            <driver>/gpu-lost (as NVIDIA's driver)
//   ECC, NVML failing, held <driver>/unhealthy = ecc | nvml | flapping
// None while healthy.
std::vector<Taint> TaintsFor(const Device& device,
                             const std::string& driver_name);

// `inventory` with each device's taints from `health` (matched by device
// name = Device::id; a device missing there is taken as healthy). With
// `withhold_unhealthy`, devices that would carry a taint are left out
// instead (for API servers that drop taints: DRADeviceTaints off).
std::vector<SliceDevice> SliceDevices(const std::vector<DraDevice>& inventory,
                                      const std::vector<Device>& health,
                                      const std::string& driver_name,
                                      bool withhold_unhealthy);

// The most devices one slice may hold: 128, and 64 when a device of the
// slice has taints (Kubernetes 1.35+; 1.34 allows 128).
struct SliceLimits {
  size_t max_devices = 128;
  size_t max_devices_with_taints = 64;
};

// `devices` cut into slices in order: chunks of max_devices, or of
// max_devices_with_taints when any device has taints (so a health change
// moves no device to another slice unless the limit changes). At least
// one slice, empty when there are no devices (a pool is published even
// when empty).
std::vector<std::vector<SliceDevice>> CutIntoSlices(
    std::vector<SliceDevice> devices, const SliceLimits& limits);

}  // namespace gdp::dra

#endif  // GDP_DRA_SLICES_H_
