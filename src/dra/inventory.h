// The devices the DRA side publishes, in our own terms: each GPU (or, on a
// MIG-enabled GPU, each MIG device) with the name, attributes and capacity
// NVIDIA's DRA driver (gpu.nvidia.com) gives it, plus our topology
// attributes, and the Device of our model it is (device nodes, health).
// Pure: built from discovery and the topology; no NVML, no Kubernetes
// types (the JSON of a ResourceSlice is made in slice_json.h).
#ifndef GDP_DRA_INVENTORY_H_
#define GDP_DRA_INVENTORY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "device/device.h"
#include "device/gpu.h"
#include "device/memory_limit_support.h"
#include "device/mig_caps.h"
#include "dra/dynamic_mig.h"
#include "topology/node_topology.h"

namespace gdp::dra {

// A device attribute's value: exactly one kind, as resource.k8s.io/v1's
// DeviceAttribute (int, bool, string, or a semantic version string).
struct AttributeValue {
  enum class Kind { kInt, kBool, kString, kVersion };
  Kind kind = Kind::kString;
  int64_t int_value = 0;
  bool bool_value = false;
  std::string text;  // kString, kVersion

  static AttributeValue Int(int64_t v);
  static AttributeValue Bool(bool v);
  static AttributeValue String(std::string v);
  static AttributeValue Version(std::string v);
  bool operator==(const AttributeValue&) const = default;
};

// A consumable capacity's requestPolicy (resource.k8s.io/v1
// CapacityRequestPolicy with a validRange): what one allocation of a device
// that allows several takes of it. A request names an amount in [min, max]
// that is min plus a multiple of step; a request naming none takes
// `default_value`.
struct RequestPolicy {
  uint64_t default_value = 0;
  uint64_t min = 0;
  uint64_t max = 0;
  uint64_t step = 0;
  bool operator==(const RequestPolicy&) const = default;
};

// The granularity of consumable memory: NVIDIA's 1Mi step.
inline constexpr uint64_t kMemoryStep = uint64_t{1} << 20;

// A set of shared counters (resource.k8s.io/v1 CounterSet, KEP-4815): what
// the devices consuming from it share, e.g. one GPU's multiprocessors,
// engines, memory and memory slices.
struct CounterSet {
  std::string name;  // a DNS label: "gpu-0-counter-set"
  // By counter name (DNS labels): "memory" (bytes), "memory-slice-3" (1).
  std::map<std::string, uint64_t> counters;
  bool operator==(const CounterSet&) const = default;
};

// The API server's most counters in a counter set, and in one device's
// consumption of one set (ResourceSliceMaxCountersPerCounterSet,
// ResourceSliceMaxCountersPerDeviceCounterConsumption).
inline constexpr size_t kMaxCountersPerSet = 32;

// What a device takes of a counter set while allocated (resource.k8s.io/v1
// DeviceCounterConsumption); the scheduler allocates it only while every
// counter has that much left.
struct CounterConsumption {
  std::string counter_set;
  std::map<std::string, uint64_t> counters;
  bool operator==(const CounterConsumption&) const = default;
};

// One device as DRA publishes it.
struct DraDevice {
  // "gpu-<minor>", or "gpu-<minor>-mig-<profile>-<gi profile>-<placement>"
  // (see DeviceName). A DNS label, unique on the node.
  std::string name;
  // By published name: "type", "uuid", ... (unqualified names belong to the
  // driver's domain) and "resource.kubernetes.io/pcieRoot", ...
  std::map<std::string, AttributeValue> attributes;
  // By published name: "memory" in bytes; MIG engine counts and memory
  // slices (1 each).
  std::map<std::string, uint64_t> capacity;
  // With consumable shares (NVIDIA's ConsumableShares): the device may be
  // allocated to several claims at once (allowMultipleAllocations), and
  // `request_policies` makes its "memory" (and "shares") consumable. False
  // and empty for a whole device.
  bool allow_multiple_allocations = false;
  std::map<std::string, RequestPolicy> request_policies;
  // Partitionable devices (NVIDIA's DynamicMIG): what the device takes of
  // its GPU's counter set when allocated (a MIG profile placement: its
  // share and its memory slices). Empty otherwise.
  std::vector<CounterConsumption> consumes_counters;
  // A MIG profile placement of a GPU published partitionable: what its
  // prepare makes (the GPU, profile, compute profile and memory slices).
  // None for every other device.
  std::optional<MigPlacement> mig_placement;
  // On the first device of a GPU published partitionable: that GPU's
  // counter set, which the publisher puts in a slice of counters only
  // (1.35+: a slice holds devices or shared counters, not both); never
  // part of the device itself.
  std::optional<CounterSet> shared_counters;
  // Whether the driver can enforce a share's memory limit on this device
  // (published as "<driver>/memoryLimits": "enforced" or "none"), and if
  // not, why.
  MemoryLimitSupport memory_limits;
  // Our model of it: `id` is `name`, `visible_id` the GPU or MIG UUID,
  // device nodes (the GPU's, and a MIG device's capability nodes), the
  // physical unit health is tracked by. Health fields are left healthy.
  Device device;
};

// NVIDIA's DRA device names. A GPU: "gpu-<minor>". A MIG device:
// "gpu-<parent minor>-mig-<profile>-<GPU instance profile ID>-<placement
// start>", where <profile> is the profile name without dots and with every
// character outside [a-z0-9-] made '-' ("1g.10gb+me" -> "1g10gb-me"); a
// MIG device whose compute instance is smaller than its GPU instance (so
// that several share one GPU instance) gets "-ci<compute instance ID>"
// appended, which NVIDIA's driver (full-size compute instances only) never
// needs.
std::string GpuDeviceName(const GpuInfo& gpu);
std::string MigDeviceName(const GpuInfo& gpu, const MigInfo& mig);
// NVIDIA's name of a MIG profile placement published for dynamic MIG
// (MigSpecTuple.ToCanonicalName): "gpu-<minor>-mig-<profile>-<GPU instance
// profile ID>-<placement start>", <profile> as above ("gpu-0-mig-1g10gb-19-3").
std::string MigPlacementName(const GpuInfo& gpu, const std::string& profile,
                             unsigned profile_id, unsigned start);

// NVIDIA's dynamic MIG counters (partitions.go of
// kubernetes-sigs/dra-driver-nvidia-gpu): a GPU's counter set is
// "<GPU device name>-counter-set" ("gpu-0-counter-set"); its counters are
// the MIG capacities with camelCase names made DNS labels ("memory",
// "multiprocessors", "copy-engines", "decoders", "encoders",
// "jpeg-engines", "ofa-engines") and "memory-slice-<i>" (1 each).
std::string CounterSetName(const GpuInfo& gpu);
std::string MemorySliceCounter(unsigned slice);

// A version string as a strict semantic version, as Kubernetes requires of
// version attributes: dot-separated numbers with leading zeros dropped and
// missing parts 0 ("535.104.05" -> "535.104.5", "12.4" -> "12.4.0").
// Result on failure: InvalidArgument when a part is not a number or there
// are more than three.
absl::StatusOr<std::string> SemanticVersion(const std::string& version);

struct InventoryOptions {
  // The driver name: the domain of our own attributes.
  std::string driver_name = "gpu.nvidia.com";
  // NVIDIA's --consumable-shares, when its ConsumableShares gate is on
  // (Config::ConsumableSharesOn); kDisabled: whole devices.
  ConsumableShares shares;
  // What becomes of a device that cannot enforce memory limits while shares
  // are on: kRefuse publishes it whole, kAllow shared anyway.
  UnenforcedShares unenforced = UnenforcedShares::kRefuse;
  // What was found of the node's memory limits (the driver version comes
  // from the NodeGpus): Nvml::HasMemoryLimits() and ReadCgroup2Mount.
  bool nvml_has_memory_limits = false;
  std::optional<std::string> cgroup2_mount;
  // NVIDIA's DynamicMIG gate: GPUs whose MIG profiles discovery read
  // (GpuInfo::mig_profiles) are published partitionable.
  bool dynamic_mig = false;
};

// Where `attributes` says whether a device enforces memory limits:
// "<driver>/memoryLimits", "enforced" or "none".
std::string MemoryLimitsAttribute(const std::string& driver_name);

// NVIDIA's consumable shape (consumable_shares.go) applied to `device`
// with memory `memory_bytes`: allowMultipleAllocations, "memory" rounded
// down to a 1Mi multiple with a requestPolicy stepping by 1Mi from 1Mi
// (kMemory; default all of it) or from 0 (kUnlimited and kCount; default
// 0), and for kCount a "shares" capacity of `shares.count` (default 1, min
// 1, step 1). Nothing for kDisabled, nor when the memory is under 2Mi
// (the API server wants min plus one step within the capacity).
void ApplyConsumableShares(const ConsumableShares& shares, DraDevice* device);

// The devices of `node` (the GPUs the DRA side serves): a GPU without MIG
// enabled as one "gpu" device, a MIG-enabled GPU as its MIG devices
// (node.gpus[i].migs; none when it has none). `topology` (may be null: no
// NVLink attributes) gives each GPU on NVLink its NVLink domain: GPUs joined
// by NVLink, directly or through one NVSwitch fabric, share
// "<driver>/nvlinkDomain" (the UUID of the domain's GPU with the lowest
// index), so a claim's matchAttribute on it keeps its GPUs on one domain.
// Each device says whether the node enforces memory limits on it
// (memory_limits, the "<driver>/memoryLimits" attribute: a GPU as
// GpuMemoryLimitSupport says, a MIG device never). With options.shares on,
// each device gets NVIDIA's consumable shape (ApplyConsumableShares, to
// GPUs and MIG devices as NVIDIA's), but one that cannot enforce memory
// limits stays whole unless options.unenforced is kAllow.
// MIG device nodes need `mig_caps` (null when no GPU has MIG devices).
// With options.dynamic_mig, a GPU with MIG profiles (mig_profiles, read
// for MIG-enabled GPUs) is published partitionable instead, as NVIDIA's
// DynamicMIG does: its counter set (shared_counters of its first device:
// each capacity's largest value across its profiles, and one
// "memory-slice-<i>" per memory slice), then every placement of every
// profile (no whole-GPU device: NVIDIA's turns MIG mode off to prepare
// one, and MIG mode is never changed here; the 7g placement is the whole)
// (a GPU's devices ordered by name, as NVIDIA's), "type" "mig",
// "parentUUID", "profile" and the GPU's
// attributes (no "uuid": the instance is made at prepare), its profile's
// capacities, consuming them and its memory slices. These devices have no
// device nodes of their own and mig_gi -1, so that any failure of the GPU
// makes every one of them unhealthy. A GPU whose counter set would exceed
// the API's 32 counters is published as without the gate, logged.
// In the order of node.gpus, MIG devices in their order. Result on failure:
// FailedPrecondition or NotFound when a MIG device's capability minors are
// missing (naming it).
absl::StatusOr<std::vector<DraDevice>> BuildInventory(
    const NodeGpus& node, const NodeTopology* topology, const MigCaps* mig_caps,
    const InventoryOptions& options);

}  // namespace gdp::dra

#endif  // GDP_DRA_INVENTORY_H_
