#include "plugin/allocator.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cdi/memory_limit.h"
#include "util/quote.h"

namespace gdp {
namespace {

const char* const kControlNodes[] = {
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
};

constexpr char kVisibleDevicesEnv[] = "NVIDIA_VISIBLE_DEVICES";
constexpr uint64_t kMiB = 1024 * 1024;

// `root` joined with `path` (which starts with '/'); "/" or "" as root
// leaves `path` as is.
std::string Join(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  return absl::StrCat(
      root.back() == '/' ? root.substr(0, root.size() - 1) : root, path);
}

// A random (version 4) UUID: the unique part of a CDI annotation key, as
// NVIDIA makes it. 36 characters, so "nvidia-device-plugin_<uuid>" stays
// within CDI's 63-character limit for the name part of the key.
std::string RandomUuid() {
  absl::BitGen gen;
  uint64_t hi = absl::Uniform<uint64_t>(gen);
  uint64_t lo = absl::Uniform<uint64_t>(gen);
  hi = (hi & ~uint64_t{0xf000}) | uint64_t{0x4000};            // version 4
  lo = (lo & ~(uint64_t{0xc} << 60)) | (uint64_t{0x8} << 60);  // RFC 4122
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi >> 32,
                         (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48,
                         lo & 0xffffffffffffULL);
}

}  // namespace

Allocator::Allocator(AllocatorOptions options) : options_(std::move(options)) {
  any_non_cdi_ = Uses(DeviceListStrategy::kEnvvar) ||
                 Uses(DeviceListStrategy::kVolumeMounts);
  if (!options_.pass_device_specs || !any_non_cdi_) return;
  for (const char* node : kControlNodes) {
    struct stat st;
    if (stat(HostPath(node).c_str(), &st) == 0) control_nodes_.push_back(node);
  }
}

bool Allocator::Uses(DeviceListStrategy s) const {
  return std::find(options_.strategies.begin(), options_.strategies.end(), s) !=
         options_.strategies.end();
}

std::string Allocator::HostPath(const std::string& container_path) const {
  return Join(options_.dev_root, container_path);
}

absl::StatusOr<ContainerAllocation> Allocator::Allocate(
    const DeviceList& list, const std::vector<std::string>& ids) const {
  if (ids.empty()) {
    return absl::InvalidArgumentError("allocate request names no devices");
  }
  absl::flat_hash_set<std::string> seen;
  std::vector<const Device*> devices;
  devices.reserve(ids.size());
  bool any_replica = false;
  for (const std::string& id : ids) {
    const Device* d = list.Find(id);
    if (d == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown device ID ", Quote(id)));
    }
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device ID ", Quote(id), " is requested more than once"));
    }
    if (d->health != Health::kHealthy) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device ", Quote(id), " is unhealthy: ", d->unhealthy_reason));
    }
    any_replica = any_replica || d->replica >= 0;
    devices.push_back(d);
  }
  if (options_.fail_requests_greater_than_one && any_replica &&
      devices.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request for ", devices.size(), " devices of '", options_.resource_name,
        "' is too large: shared devices allow at most 1 per container "
        "(failRequestsGreaterThanOne)"));
  }

  // The physical units, once each, in request order.
  std::vector<std::string> units;
  absl::flat_hash_set<std::string> units_seen;
  for (const Device* d : devices) {
    if (units_seen.insert(d->visible_id).second) {
      units.push_back(d->visible_id);
    }
  }

  ContainerAllocation out;
  if (Uses(DeviceListStrategy::kCdiAnnotations) ||
      Uses(DeviceListStrategy::kCdiCri)) {
    // Replicas with a share: their own CDI devices, whose hook entries
    // carry the limit (the pod cannot change them); other devices: their
    // unit's, once.
    std::vector<std::string> names;
    names.reserve(devices.size());
    absl::flat_hash_set<std::string> named;
    for (const Device* d : devices) {
      const std::string& name = ReplicaCdiDevice(*d) ? d->id : d->visible_id;
      if (named.insert(name).second) {
        names.push_back(absl::StrCat(options_.cdi_kind, "=", name));
      }
    }
    if (Uses(DeviceListStrategy::kCdiAnnotations)) {
      out.annotations[absl::StrCat(options_.cdi_annotation_prefix,
                                   kCdiAnnotationPlugin, "_", RandomUuid())] =
          absl::StrJoin(names, ",");
    }
    if (Uses(DeviceListStrategy::kCdiCri)) out.cdi_devices = std::move(names);
  }
  if (options_.sharing == SharingStrategy::kMps) AddMps(devices, out);
  if (absl::Status s = AddMemoryLimits(devices, out); !s.ok()) return s;
  if (!any_non_cdi_) return out;

  if (Uses(DeviceListStrategy::kEnvvar)) {
    out.envs[kVisibleDevicesEnv] = absl::StrJoin(units, ",");
  }
  if (Uses(DeviceListStrategy::kVolumeMounts)) {
    out.envs[kVisibleDevicesEnv] = kVolumeMountsRoot;
    for (const std::string& u : units) {
      out.mounts.push_back(
          {absl::StrCat(kVolumeMountsRoot, "/", u), "/dev/null", false});
    }
  }
  if (options_.pass_device_specs) {
    absl::flat_hash_set<std::string> nodes_seen;
    auto add = [&](const std::string& path) {
      if (nodes_seen.insert(path).second) {
        out.device_specs.push_back({path, HostPath(path), "rw"});
      }
    };
    for (const std::string& node : control_nodes_) add(node);
    for (const Device* d : devices) {
      for (const std::string& node : d->device_nodes) add(node);
    }
  }
  return out;
}

void Allocator::AddMps(const std::vector<const Device*>& devices,
                       ContainerAllocation& out) const {
  const std::string pipe = absl::StrCat("/", options_.resource_name, "/pipe");
  const std::string container_pipe = Join(kMpsContainerRoot, pipe);
  out.envs["CUDA_MPS_PIPE_DIRECTORY"] = container_pipe;
  out.mounts.push_back({container_pipe, Join(options_.mps_root, pipe), false});
  out.mounts.push_back({"/dev/shm", Join(options_.mps_root, "/shm"), false});

  if (options_.replicas < 1) return;
  // The replicated units, once each, ordered as CUDA numbers them in the
  // container (by GPU index; request order among equals), and how many of
  // each unit's replicas the container holds.
  std::vector<const Device*> units;
  absl::flat_hash_map<std::string, uint64_t> held;
  for (const Device* d : devices) {
    if (d->replica >= 0 && held[d->visible_id]++ == 0) units.push_back(d);
  }
  if (units.empty()) return;
  std::stable_sort(units.begin(), units.end(),
                   [](const Device* a, const Device* b) {
                     return a->gpu_index < b->gpu_index;
                   });
  const uint64_t replicas = static_cast<uint64_t>(options_.replicas);
  uint64_t min_held = replicas;
  for (const Device* u : units) {
    min_held = std::min(min_held, held[u->visible_id]);
  }
  out.envs["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] =
      absl::StrCat(min_held * 100 / replicas);
  std::vector<std::string> limits;
  for (size_t i = 0; i < units.size(); ++i) {
    const uint64_t k = held[units[i]->visible_id];
    uint64_t mib = options_.memory_per_replica > 0
                       ? k * options_.memory_per_replica / kMiB
                       : units[i]->memory_bytes / replicas * k / kMiB;
    if (mib > 0) limits.push_back(absl::StrCat(i, "=", mib, "M"));
  }
  if (!limits.empty()) {
    out.envs["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = absl::StrJoin(limits, ",");
  }
}

bool Allocator::ReplicaCdiDevice(const Device& d) const {
  return d.replica >= 0 && options_.memory_per_replica > 0 &&
         options_.memory_limit_hook == MemoryLimitHookKind::kOurs;
}

absl::Status Allocator::AddMemoryLimits(
    const std::vector<const Device*>& devices, ContainerAllocation& out) const {
  // Our hook's limits are in the replicas' CDI devices.
  if (options_.memory_per_replica == 0 ||
      options_.memory_limit_hook != MemoryLimitHookKind::kNvidia) {
    return absl::OkStatus();
  }
  // k replicas of a GPU: k shares on it.
  std::map<std::string, uint64_t> limits;
  for (const Device* d : devices) {
    if (d->replica >= 0) limits[d->gpu_uuid] += options_.memory_per_replica;
  }
  absl::StatusOr<std::vector<std::string>> env =
      cdi::NvidiaAllocateLimitEnv(limits);
  if (!env.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory limits of '", options_.resource_name,
                     "': ", env.status().message()));
  }
  for (const std::string& kv : *env) {
    size_t eq = kv.find('=');
    out.envs[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return absl::OkStatus();
}

}  // namespace gdp
