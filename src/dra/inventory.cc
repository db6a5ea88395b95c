#include "dra/inventory.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "util/logging.h"

namespace gdp::dra {
namespace {

constexpr char kStandardPrefix[] = "resource.kubernetes.io/";

// NVIDIA's profile part of a MIG device name: dots dropped, lower case,
// anything outside [a-z0-9-] made '-', no '-' at either end.
std::string ProfilePart(const std::string& profile) {
  std::string out;
  for (char c : absl::AsciiStrToLower(profile)) {
    if (c == '.') continue;
    out.push_back(absl::ascii_isalnum(c) || c == '-' ? c : '-');
  }
  const size_t first = out.find_first_not_of('-');
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of('-') - first + 1);
}

// Attributes a GPU and its MIG devices share (NVIDIA copies the parent's).
void AddCommon(const GpuInfo& g, const NodeGpus& node,
               std::map<std::string, AttributeValue>* a) {
  (*a)["productName"] = AttributeValue::String(g.name);
  (*a)["brand"] = AttributeValue::String(g.brand);
  (*a)["architecture"] = AttributeValue::String(g.architecture);
  const std::pair<const char*, std::string> versions[] = {
      {"cudaComputeCapability", absl::StrCat(g.cc_major, ".", g.cc_minor)},
      {"driverVersion", node.driver_version},
      {"cudaDriverVersion", absl::StrCat(node.cuda_driver_version / 1000, ".",
                                         node.cuda_driver_version % 1000 / 10)},
  };
  for (const auto& [name, text] : versions) {
    absl::StatusOr<std::string> v = SemanticVersion(text);
    if (!v.ok()) {
      LOG_WARN("GPU {}: not publishing {}: {}", g.index, name,
               v.status().message());
      continue;
    }
    (*a)[name] = AttributeValue::Version(*std::move(v));
  }
  (*a)[absl::StrCat(kStandardPrefix, "pciBusID")] =
      AttributeValue::String(g.pci_bus_id);
  if (!g.pcie_root.empty()) {
    (*a)[absl::StrCat(kStandardPrefix, "pcieRoot")] =
        AttributeValue::String(g.pcie_root);
  }
  if (g.numa_node >= 0) {
    (*a)[absl::StrCat(kStandardPrefix, "numaNode")] =
        AttributeValue::Int(g.numa_node);
  }
}

// The NVLink domain of each GPU of the topology, by UUID: connected
// components of the NVLink graph over usable GPUs, named by their member
// with the lowest position (discovery orders GPUs by index). GPUs without
// NVLink are in no domain.
std::map<std::string, std::string> NvLinkDomains(const NodeTopology& nt) {
  const Topology& t = nt.topology();
  const int n = t.num_gpus();
  std::vector<int> component(n, -1);
  std::map<std::string, std::string> out;
  for (int start = 0; start < n; ++start) {
    if (component[start] >= 0 || !t.Usable(start)) continue;
    std::vector<int> members = {start};
    component[start] = start;
    for (size_t k = 0; k < members.size(); ++k) {
      for (int b = 0; b < n; ++b) {
        if (component[b] >= 0 || !t.Usable(b) || b == members[k]) continue;
        if (t.NvLinked(members[k], b)) {
          component[b] = start;
          members.push_back(b);
        }
      }
    }
    if (members.size() < 2) continue;
    for (int m : members) out[nt.gpu_uuids()[m]] = nt.gpu_uuids()[start];
  }
  return out;
}

// The capacities NVIDIA publishes for a MIG profile (CommonCapacitiesMig),
// by capacity name, and the counter each is consumed from.
struct MigCapacity {
  const char* capacity;
  const char* counter;
  uint64_t MigProfilePlacements::*wide;
  unsigned MigProfilePlacements::*narrow;
};
constexpr MigCapacity kMigCapacities[] = {
    {"memory", "memory", &MigProfilePlacements::memory_mib, nullptr},
    {"multiprocessors", "multiprocessors", nullptr,
     &MigProfilePlacements::multiprocessors},
    {"copyEngines", "copy-engines", nullptr,
     &MigProfilePlacements::copy_engines},
    {"decoders", "decoders", nullptr, &MigProfilePlacements::decoders},
    {"encoders", "encoders", nullptr, &MigProfilePlacements::encoders},
    {"jpegEngines", "jpeg-engines", nullptr, &MigProfilePlacements::jpegs},
    {"ofaEngines", "ofa-engines", nullptr, &MigProfilePlacements::ofas},
};

// Capacity `c` of profile `p`, memory in bytes.
uint64_t CapacityOf(const MigProfilePlacements& p, const MigCapacity& c) {
  return c.wide != nullptr ? (p.*c.wide) << 20 : p.*c.narrow;
}

}  // namespace

AttributeValue AttributeValue::Int(int64_t v) {
  AttributeValue a;
  a.kind = Kind::kInt;
  a.int_value = v;
  return a;
}

AttributeValue AttributeValue::Bool(bool v) {
  AttributeValue a;
  a.kind = Kind::kBool;
  a.bool_value = v;
  return a;
}

AttributeValue AttributeValue::String(std::string v) {
  AttributeValue a;
  a.kind = Kind::kString;
  a.text = std::move(v);
  return a;
}

AttributeValue AttributeValue::Version(std::string v) {
  AttributeValue a;
  a.kind = Kind::kVersion;
  a.text = std::move(v);
  return a;
}

std::string MemoryLimitsAttribute(const std::string& driver_name) {
  return absl::StrCat(driver_name, "/memoryLimits");
}

void ApplyConsumableShares(const ConsumableShares& shares, DraDevice* device) {
  using Mode = ConsumableShares::Mode;
  if (shares.mode == Mode::kDisabled) return;
  auto memory = device->capacity.find("memory");
  if (memory == device->capacity.end()) return;  // as NVIDIA's
  const uint64_t max = memory->second / kMemoryStep * kMemoryStep;
  if (max < 2 * kMemoryStep) return;
  device->allow_multiple_allocations = true;
  memory->second = max;
  if (shares.mode == Mode::kMemory) {
    device->request_policies["memory"] = {.default_value = max,
                                          .min = kMemoryStep,
                                          .max = max,
                                          .step = kMemoryStep};
    return;
  }
  device->request_policies["memory"] = {
      .default_value = 0, .min = 0, .max = max, .step = kMemoryStep};
  if (shares.mode == Mode::kCount) {
    const uint64_t n = static_cast<uint64_t>(shares.count);
    device->capacity["shares"] = n;
    device->request_policies["shares"] = {
        .default_value = 1, .min = 1, .max = n, .step = 1};
  }
}

std::string GpuDeviceName(const GpuInfo& gpu) {
  return absl::StrCat("gpu-", gpu.minor);
}

std::string MigDeviceName(const GpuInfo& gpu, const MigInfo& mig) {
  std::string name =
      absl::StrCat("gpu-", gpu.minor, "-mig-", ProfilePart(mig.profile), "-",
                   mig.gi_profile_id, "-", mig.placement_start);
  if (mig.ci_slices < mig.gi_slices) absl::StrAppend(&name, "-ci", mig.ci);
  return name;
}

std::string MigPlacementName(const GpuInfo& gpu, const std::string& profile,
                             unsigned profile_id, unsigned start) {
  return absl::StrCat("gpu-", gpu.minor, "-mig-", ProfilePart(profile), "-",
                      profile_id, "-", start);
}

std::string CounterSetName(const GpuInfo& gpu) {
  return absl::StrCat(GpuDeviceName(gpu), "-counter-set");
}

std::string MemorySliceCounter(unsigned slice) {
  return absl::StrCat("memory-slice-", slice);
}

absl::StatusOr<std::string> SemanticVersion(const std::string& version) {
  std::vector<std::string> parts = absl::StrSplit(version, '.');
  if (parts.size() > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", version, "' has more than three parts"));
  }
  std::vector<std::string> out;
  for (const std::string& p : parts) {
    uint64_t n = 0;
    if (p.empty() || p.size() > 19 ||
        p.find_first_not_of("0123456789") != std::string::npos ||
        !absl::SimpleAtoi(p, &n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", version, "' is not a dotted version number"));
    }
    out.push_back(absl::StrCat(n));
  }
  while (out.size() < 3) out.push_back("0");
  return absl::StrJoin(out, ".");
}

namespace {

// NVIDIA's DynamicMIG devices of GPU `g` (BuildInventory): every profile
// placement; the first device brings the counter set. Empty (logged) when
// the counter set would not fit in one, or no placement fits its memory
// slices. NVIDIA's driver also offers the whole GPU on Hopper and newer,
// turning MIG mode off to prepare it; MIG mode is never changed here, and
// in MIG mode a GPU runs CUDA only through MIG devices, so the whole of it
// is its 7g placement.
std::vector<DraDevice> Partitioned(const GpuInfo& g, const NodeGpus& node) {
  const std::string set = CounterSetName(g);
  CounterSet counters{set, {}};
  std::map<std::string, uint64_t> largest;  // capacity -> largest value
  unsigned slices = 0;
  for (const MigProfilePlacements& p : g.mig_profiles) {
    for (const MigCapacity& c : kMigCapacities) {
      uint64_t& v = largest[c.capacity];
      v = std::max(v, CapacityOf(p, c));
    }
    for (const nvmlGpuInstancePlacement_t& pl : p.placements) {
      // NVIDIA counts the largest placement's slices; a placement reaching
      // past them would name a counter the set lacks.
      slices = std::max({slices, pl.size, pl.start + pl.size});
    }
  }
  for (const MigCapacity& c : kMigCapacities) {
    counters.counters[c.counter] = largest[c.capacity];
  }
  for (unsigned i = 0; i < slices; ++i) {
    counters.counters[MemorySliceCounter(i)] = 1;
  }
  if (counters.counters.size() > kMaxCountersPerSet) {
    LOG_WARN(
        "GPU {} ({}): {} memory slices make {} counters, more than a counter "
        "set may hold ({}): published as without DynamicMIG",
        g.index, g.uuid, slices, counters.counters.size(), kMaxCountersPerSet);
    return {};
  }
  std::vector<DraDevice> out;
  for (const MigProfilePlacements& p : g.mig_profiles) {
    for (const nvmlGpuInstancePlacement_t& pl : p.placements) {
      DraDevice d;
      d.name = MigPlacementName(g, p.name, p.profile_id, pl.start);
      d.attributes["type"] = AttributeValue::String("mig");
      d.attributes["parentUUID"] = AttributeValue::String(g.uuid);
      d.attributes["profile"] = AttributeValue::String(p.name);
      AddCommon(g, node, &d.attributes);
      CounterConsumption take{set, {}};
      for (const MigCapacity& c : kMigCapacities) {
        d.capacity[c.capacity] = CapacityOf(p, c);
        take.counters[c.counter] = CapacityOf(p, c);
      }
      for (unsigned s = pl.start; s < pl.start + pl.size; ++s) {
        take.counters[MemorySliceCounter(s)] = 1;
      }
      d.consumes_counters = {std::move(take)};
      d.mig_placement = MigPlacement{.gpu_uuid = g.uuid,
                                     .gpu_minor = g.minor,
                                     .profile = p.name,
                                     .profile_id = p.profile_id,
                                     .ci_profile_id = p.ci_profile_id,
                                     .start = pl.start,
                                     .size = pl.size};
      d.device.id = d.name;
      d.device.numa_node = g.numa_node;
      d.device.gpu_index = g.index;
      d.device.gpu_uuid = g.uuid;
      d.device.memory_bytes = p.memory_mib << 20;
      out.push_back(std::move(d));
    }
  }
  if (out.empty()) return {};
  // By name, as NVIDIA's driver lists a GPU's devices (the scheduler takes
  // the first that fits, so the order decides which placement a claim for
  // any MIG device gets): smaller profiles before larger ones.
  std::sort(out.begin(), out.end(), [](const DraDevice& a, const DraDevice& b) {
    return a.name < b.name;
  });
  out.front().shared_counters = std::move(counters);
  return out;
}

}  // namespace

absl::StatusOr<std::vector<DraDevice>> BuildInventory(
    const NodeGpus& node, const NodeTopology* topology, const MigCaps* mig_caps,
    const InventoryOptions& options) {
  const std::map<std::string, std::string> domains =
      topology != nullptr ? NvLinkDomains(*topology)
                          : std::map<std::string, std::string>();
  const MemoryLimitSupport node_limits =
      NodeMemoryLimitSupport({.nvml_has_limits = options.nvml_has_memory_limits,
                              .driver_version = node.driver_version,
                              .cgroup2_mount = options.cgroup2_mount});
  const std::string limits_attribute =
      MemoryLimitsAttribute(options.driver_name);
  // The attribute, and the consumable shape where shares are on and the
  // device may have them.
  auto share = [&](const MemoryLimitSupport& limits, DraDevice* d) {
    d->memory_limits = limits;
    d->attributes[limits_attribute] =
        AttributeValue::String(limits.enforced ? "enforced" : "none");
    if (limits.enforced || options.unenforced == UnenforcedShares::kAllow) {
      ApplyConsumableShares(options.shares, d);
    }
  };
  // The attributes of a whole GPU device.
  auto whole_gpu = [&](const GpuInfo& g) {
    DraDevice d;
    d.name = GpuDeviceName(g);
    d.attributes["type"] = AttributeValue::String("gpu");
    d.attributes["uuid"] = AttributeValue::String(g.uuid);
    AddCommon(g, node, &d.attributes);
    if (auto it = domains.find(g.uuid); it != domains.end()) {
      d.attributes[absl::StrCat(options.driver_name, "/nvlinkDomain")] =
          AttributeValue::String(it->second);
    }
    d.device.id = d.name;
    d.device.visible_id = g.uuid;
    d.device.device_nodes = {absl::StrCat("/dev/nvidia", g.minor)};
    d.device.numa_node = g.numa_node;
    d.device.gpu_index = g.index;
    d.device.gpu_uuid = g.uuid;
    d.device.memory_bytes = g.memory_bytes;
    return d;
  };
  std::vector<DraDevice> out;
  for (const GpuInfo& g : node.gpus) {
    const std::string gpu_node = absl::StrCat("/dev/nvidia", g.minor);
    const MemoryLimitSupport gpu_limits = GpuMemoryLimitSupport(node_limits, g);
    if (options.dynamic_mig && !g.mig_profiles.empty()) {
      std::vector<DraDevice> devices = Partitioned(g, node);
      if (!devices.empty()) {
        for (DraDevice& d : devices) {
          share(gpu_limits, &d);
          out.push_back(std::move(d));
        }
        continue;
      }
    }
    if (!g.mig_enabled) {
      DraDevice d = whole_gpu(g);
      d.capacity["memory"] = g.memory_bytes;
      share(gpu_limits, &d);
      out.push_back(std::move(d));
      continue;
    }
    if (g.migs.empty()) {
      LOG_WARN(
          "GPU {} ({}) has MIG enabled but no MIG devices: DRA publishes "
          "nothing for it",
          g.index, g.uuid);
    }
    for (const MigInfo& m : g.migs) {
      if (mig_caps == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            "MIG device ", m.uuid, ": MIG capability minors were not read"));
      }
      DraDevice d;
      d.name = MigDeviceName(g, m);
      d.attributes["type"] = AttributeValue::String("mig");
      d.attributes["uuid"] = AttributeValue::String(m.uuid);
      d.attributes["parentUUID"] = AttributeValue::String(g.uuid);
      d.attributes["profile"] = AttributeValue::String(m.profile);
      AddCommon(g, node, &d.attributes);
      d.capacity["memory"] = m.memory_bytes;
      d.capacity["multiprocessors"] = m.multiprocessors;
      d.capacity["copyEngines"] = m.copy_engines;
      d.capacity["decoders"] = m.decoders;
      d.capacity["encoders"] = m.encoders;
      d.capacity["jpegEngines"] = m.jpegs;
      d.capacity["ofaEngines"] = m.ofas;
      for (unsigned s = m.placement_start;
           s < m.placement_start + m.placement_size; ++s) {
        d.capacity[absl::StrCat("memorySlice", s)] = 1;
      }
      d.device.id = d.name;
      d.device.visible_id = m.uuid;
      d.device.device_nodes = {gpu_node};
      for (absl::StatusOr<unsigned> cap :
           {mig_caps->GpuInstanceMinor(g.minor, m.gi),
            mig_caps->ComputeInstanceMinor(g.minor, m.gi, m.ci)}) {
        if (!cap.ok()) {
          return absl::Status(cap.status().code(),
                              absl::StrCat("MIG device ", m.uuid, ": ",
                                           cap.status().message()));
        }
        d.device.device_nodes.push_back(MigCaps::DevicePath(*cap));
      }
      d.device.numa_node = g.numa_node;
      d.device.gpu_index = g.index;
      d.device.gpu_uuid = g.uuid;
      d.device.mig_gi = static_cast<int>(m.gi);
      d.device.mig_ci = static_cast<int>(m.ci);
      d.device.memory_bytes = m.memory_bytes;
      share(gpu_limits, &d);  // the GPU's: in MIG mode, never enforced
      out.push_back(std::move(d));
    }
  }
  return out;
}

}  // namespace gdp::dra
