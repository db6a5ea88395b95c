// What goes into this node's ResourceSlices: each published device with the
// taints its health calls for, cut into slices no larger than the API
// server accepts. Pure; the JSON is made in slice_json.h.
#ifndef GDP_DRA_SLICES_H_
#define GDP_DRA_SLICES_H_

#include <cstdint>
#include <map>
#include <optional>
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
  // consumesCounters (DraDevice's).
  std::vector<CounterConsumption> consumes_counters;
  std::vector<Taint> taints;
  // DraDevice's: the counter set this device brings to the pool, which
  // CutIntoSlices moves into a counters-only slice (never set on the
  // devices of a SliceContent).
  std::optional<CounterSet> shared_counters;
  bool operator==(const SliceDevice&) const = default;
};

// What one ResourceSlice of the pool holds: devices, or shared counter
// sets (Kubernetes 1.35+ refuses a slice with both).
struct SliceContent {
  std::vector<SliceDevice> devices;
  std::vector<CounterSet> counter_sets;
  bool operator==(const SliceContent&) const = default;
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
// instead (for API servers that drop taints: DRADeviceTaints off;
// WithholdTainted).
std::vector<SliceDevice> SliceDevices(const std::vector<DraDevice>& inventory,
                                      const std::vector<Device>& health,
                                      const std::string& driver_name,
                                      bool withhold_unhealthy);

// Leaves out the devices with taints. A counter set one of them brings
// (shared_counters) goes to the first device kept that consumes from it,
// and is dropped when none does.
void WithholdTainted(std::vector<SliceDevice>* devices);

// What one slice may hold (pkg/apis/resource/validation): 128 devices, 64
// when a device of the slice has taints or consumes counters (Kubernetes
// 1.35+; 1.34 allows 128), and 8 counter sets of at most 32 counters each
// (a device's consumption at most 32 counters too).
struct SliceLimits {
  size_t max_devices = 128;
  size_t max_devices_with_taints = 64;  // or consumesCounters
  size_t max_counter_sets = 8;
};

// The pool's slices for `devices`: first the counter sets the devices
// bring (shared_counters, in device order; max_counter_sets a slice),
// then the devices in order, in slices of at most max_devices, or
// max_devices_with_taints when any device of the pool has taints or
// consumes counters (so a health change moves no device to another slice
// unless the limit changes). Devices consuming one counter set (one GPU's)
// go whole into one slice when they fit in one, so that a change of one
// GPU rewrites one slice. At least one slice, empty when there are no
// devices (a pool is published even when empty).
std::vector<SliceContent> CutIntoSlices(std::vector<SliceDevice> devices,
                                        const SliceLimits& limits);

}  // namespace gdp::dra

#endif  // GDP_DRA_SLICES_H_
