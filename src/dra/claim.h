// A ResourceClaim as the DRA side needs it, in our own terms: which claim,
// which devices it was allocated, and the configuration NVIDIA's claim
// parameters (resource.nvidia.com/v1beta1 GpuConfig, MigDeviceConfig) ask
// for. Read from the API server's JSON by claim_json.h.
#ifndef GDP_DRA_CLAIM_H_
#define GDP_DRA_CLAIM_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gdp::dra {

// How the kubelet names a claim.
struct ClaimRef {
  std::string ns;
  std::string name;
  std::string uid;
  bool operator==(const ClaimRef&) const = default;
};

// "<namespace>/<name>" for messages.
std::string Describe(const ClaimRef& ref);

// NVIDIA's sharing settings of a GPU or MIG device.
struct Sharing {
  enum class Strategy { kTimeSlicing, kMps };
  // NVIDIA's time-slice intervals: Default, Short, Medium, Long.
  enum class Interval { kDefault, kShort, kMedium, kLong };
  Strategy strategy = Strategy::kTimeSlicing;
  Interval interval = Interval::kDefault;  // kTimeSlicing
  // kMps: mpsConfig.
  std::optional<int> active_thread_percentage;  // 0..100
  std::optional<uint64_t> pinned_memory_limit;  // bytes, for every device
  // Per device, by GPU index or UUID as the config wrote it; bytes.
  std::map<std::string, uint64_t> per_device_pinned_memory_limit;
  bool operator==(const Sharing&) const = default;
};

// One opaque configuration of our driver from the claim's allocation.
struct DeviceConfig {
  enum class Kind { kGpu, kMig };  // GpuConfig, MigDeviceConfig
  Kind kind = Kind::kGpu;
  bool from_claim = false;            // else from the DeviceClass
  std::vector<std::string> requests;  // empty: every request
  Sharing sharing;
  bool operator==(const DeviceConfig&) const = default;
};

// One entry of status.allocation.devices.results.
struct AllocatedDevice {
  std::string request;  // "gpu", or "gpu/a100" for a subrequest
  std::string driver;
  std::string pool;
  std::string device;
  bool admin_access = false;
  // consumedCapacity (KEP-5075): what this result consumes of each of the
  // device's capacities ("memory" in bytes, "shares" as a count), for a
  // device allocated with allowMultipleAllocations; empty otherwise.
  std::map<std::string, uint64_t> consumed_capacity = {};
  // shareID: which share of the device this result is; empty for a device
  // allocated whole.
  std::string share_id = "";
  bool operator==(const AllocatedDevice&) const = default;
};

// An allocated claim: every result (of any driver), and our driver's
// configurations in the order they apply: the DeviceClass's, then the
// claim's, each in list order (a later one wins).
struct AllocatedClaim {
  ClaimRef ref;
  std::vector<AllocatedDevice> results;
  std::vector<DeviceConfig> configs;
};

}  // namespace gdp::dra

#endif  // GDP_DRA_CLAIM_H_
