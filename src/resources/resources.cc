#include "resources/resources.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/logging.h"

namespace gdp {
namespace {

// A device before sharing, with what sharing.resources[].devices and the
// name patterns may refer to.
struct Unit {
  Device device;
  std::string index_ref;  // "3" for a GPU, "0:1" for a MIG device
  std::string uuid;       // GPU or MIG UUID
  std::string match_key;  // product name (GPU) or profile (MIG)
  bool mig = false;
  int cc_major = 0, cc_minor = 0;
};

using Groups = std::map<std::string, std::vector<Unit>>;

Unit GpuUnit(const GpuInfo& g, DeviceIdStrategy ids) {
  Unit u;
  u.device.id = ids == DeviceIdStrategy::kUuid ? g.uuid : absl::StrCat(g.index);
  u.device.visible_id = u.device.id;
  u.device.device_nodes.push_back(absl::StrCat("/dev/nvidia", g.minor));
  u.device.numa_node = g.numa_node;
  u.device.gpu_index = g.index;
  u.device.gpu_uuid = g.uuid;
  u.device.memory_bytes = g.memory_bytes;
  u.index_ref = absl::StrCat(g.index);
  u.uuid = g.uuid;
  u.match_key = g.name;
  u.cc_major = g.cc_major;
  u.cc_minor = g.cc_minor;
  return u;
}

absl::StatusOr<Unit> MigUnit(const GpuInfo& g, const MigInfo& m,
                             DeviceIdStrategy ids, const MigCaps* caps) {
  if (caps == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MIG device ", m.uuid, ": MIG capability minors were not read"));
  }
  Unit u = GpuUnit(g, ids);
  u.index_ref = absl::StrCat(g.index, ":", m.index);
  u.uuid = m.uuid;
  u.match_key = m.profile;
  u.mig = true;
  u.device.id = ids == DeviceIdStrategy::kUuid ? m.uuid : u.index_ref;
  u.device.visible_id = u.device.id;
  u.device.mig_gi = static_cast<int>(m.gi);
  u.device.mig_ci = static_cast<int>(m.ci);
  u.device.memory_bytes = m.memory_bytes;
  for (absl::StatusOr<unsigned> cap :
       {caps->GpuInstanceMinor(g.minor, m.gi),
        caps->ComputeInstanceMinor(g.minor, m.gi, m.ci)}) {
    if (!cap.ok()) {
      return absl::Status(
          cap.status().code(),
          absl::StrCat("MIG device ", m.uuid, ": ", cap.status().message()));
    }
    u.device.device_nodes.push_back(MigCaps::DevicePath(*cap));
  }
  return u;
}

// The resource name for a device: the first matching pattern's name, the
// default when no patterns are configured, nullopt when none matches.
std::optional<std::string> NameFor(const std::vector<ResourcePattern>& patterns,
                                   const std::string& key,
                                   const std::string& fallback) {
  if (patterns.empty()) return fallback;
  for (const ResourcePattern& p : patterns) {
    if (fnmatch(p.pattern.c_str(), key.c_str(), 0) == 0) return p.name;
  }
  return std::nullopt;
}

void AddNamed(Groups* groups, const std::vector<ResourcePattern>& patterns,
              const std::string& fallback, Unit unit) {
  std::optional<std::string> name = NameFor(patterns, unit.match_key, fallback);
  if (!name.has_value()) {
    LOG_INFO("Not advertising {} ({}): no resource pattern matches it",
             unit.uuid, unit.match_key);
    return;
  }
  (*groups)[*name].push_back(std::move(unit));
}

absl::Status AddMigUnits(const GpuInfo& g, const Config& c, const MigCaps* caps,
                         Groups* groups, bool single) {
  for (const MigInfo& m : g.migs) {
    absl::StatusOr<Unit> u = MigUnit(g, m, c.device_id_strategy, caps);
    if (!u.ok()) return u.status();
    if (single) {
      AddNamed(groups, c.gpu_resources, kResourceName, *std::move(u));
    } else {
      AddNamed(groups, c.mig_resources,
               absl::StrCat(kResourcePrefix, "mig-", m.profile), *std::move(u));
    }
  }
  return absl::OkStatus();
}

// MIG single: every GPU MIG-enabled, every MIG device of one profile.
absl::Status CheckSingle(const NodeGpus& node) {
  std::set<std::string> profiles;
  for (const GpuInfo& g : node.gpus) {
    if (!g.mig_enabled) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MIG strategy single: GPU ", g.index, " (", g.uuid,
          ") has MIG disabled while other GPUs have it enabled; all GPUs "
          "must have the same MIG mode (or use --mig-strategy=mixed)"));
    }
    if (g.migs.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("MIG strategy single: GPU ", g.index, " (", g.uuid,
                       ") has MIG enabled but no MIG devices"));
    }
    for (const MigInfo& m : g.migs) profiles.insert(m.profile);
  }
  if (profiles.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("MIG strategy single: the node has MIG devices of "
                     "several profiles (",
                     absl::StrJoin(profiles, ", "),
                     "); use --mig-strategy=mixed or one profile"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Groups> BaseGroups(const NodeGpus& node, const Config& c,
                                  const MigCaps* caps) {
  Groups groups;
  bool any_mig = std::any_of(node.gpus.begin(), node.gpus.end(),
                             [](const GpuInfo& g) { return g.mig_enabled; });
  bool single = c.mig_strategy == MigStrategy::kSingle && any_mig;
  if (single) {
    if (absl::Status s = CheckSingle(node); !s.ok()) return s;
  }
  for (const GpuInfo& g : node.gpus) {
    if (g.mig_enabled && c.mig_strategy != MigStrategy::kNone) {
      if (g.migs.empty()) {
        LOG_WARN("GPU {} ({}) has MIG enabled but no MIG devices", g.index,
                 g.uuid);
      }
      if (absl::Status s = AddMigUnits(g, c, caps, &groups, single); !s.ok()) {
        return s;
      }
      continue;
    }
    if (g.mig_enabled) {
      LOG_WARN(
          "GPU {} ({}) has MIG enabled but --mig-strategy=none; advertising "
          "it whole",
          g.index, g.uuid);
    }
    AddNamed(&groups, c.gpu_resources, kResourceName,
             GpuUnit(g, c.device_id_strategy));
  }
  return groups;
}

bool Selected(const SharedDevices& sel, const Unit& u, size_t position) {
  switch (sel.kind) {
    case SharedDevices::Kind::kAll:
      return true;
    case SharedDevices::Kind::kCount:
      return position < static_cast<size_t>(sel.count);
    case SharedDevices::Kind::kList:
      return std::find_if(sel.list.begin(), sel.list.end(),
                          [&](const std::string& ref) {
                            return ref == u.index_ref || ref == u.uuid;
                          }) != sel.list.end();
  }
  return false;
}

absl::Status CheckMps(const SharedResource& r, const Unit& u) {
  if (u.mig) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sharing.mps.resources: ", r.name,
        ": MPS sharing is not supported on MIG devices (", u.uuid, ")"));
  }
  int max = (u.cc_major * 10 + u.cc_minor) < 75 ? 16 : 48;
  if (r.replicas > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("sharing.mps.resources: ", r.name, ": ", r.replicas,
                     " replicas, but MPS allows at most ", max,
                     " clients on GPU ", u.index_ref, " (compute capability ",
                     u.cc_major, ".", u.cc_minor, ")"));
  }
  return absl::OkStatus();
}

// memoryPerReplica needs a full GPU (the driver limits no MIG device) with
// room for every replica's share.
absl::Status CheckMemoryPerReplica(const SharedResource& r, const Unit& u) {
  if (r.memory_per_replica == 0) return absl::OkStatus();
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  if (u.mig) {
    return absl::InvalidArgumentError(
        absl::StrCat("sharing: ", r.name,
                     ": memoryPerReplica cannot be enforced on MIG "
                     "device ",
                     u.uuid,
                     " (the driver limits the memory of full GPUs "
                     "only)"));
  }
  if (u.device.memory_bytes / static_cast<uint64_t>(r.replicas) <
      r.memory_per_replica) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sharing: ", r.name, ": memoryPerReplica ", r.memory_per_replica / kMiB,
        " MiB times ", r.replicas, " replicas does not fit GPU ", u.index_ref,
        " (", u.uuid, ", ", u.device.memory_bytes / kMiB, " MiB; at most ",
        u.device.memory_bytes / static_cast<uint64_t>(r.replicas) / kMiB,
        " MiB per replica)"));
  }
  return absl::OkStatus();
}

struct SharedInfo {
  int replicas = 1;
  bool fail_requests_greater_than_one = false;
  SharingStrategy strategy = SharingStrategy::kNone;
  uint64_t memory_per_replica = 0;
};

// Moves the chosen units of each shared resource into replicas under their
// (possibly new) name.
absl::Status ApplySharing(const Sharing& sharing, Groups* groups,
                          std::map<std::string, SharedInfo>* info) {
  for (const SharedResource& r : sharing.resources) {
    auto it = groups->find(r.name);
    if (it == groups->end()) {
      VLOG(1, "Sharing {}: no such resource on this node", r.name);
      continue;
    }
    std::string target = !r.rename.empty()           ? r.rename
                         : sharing.rename_by_default ? r.name + ".shared"
                                                     : r.name;
    if (target != r.name && groups->count(target) > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("sharing: resource ", r.name, " renamed to ", target,
                       ", which is already a resource on this node"));
    }
    std::vector<Unit> kept, replicas;
    for (size_t i = 0; i < it->second.size(); ++i) {
      Unit& u = it->second[i];
      if (!Selected(r.devices, u, i)) {
        kept.push_back(std::move(u));
        continue;
      }
      if (sharing.strategy == SharingStrategy::kMps) {
        if (absl::Status s = CheckMps(r, u); !s.ok()) return s;
      }
      if (absl::Status s = CheckMemoryPerReplica(r, u); !s.ok()) return s;
      for (int k = 0; k < r.replicas; ++k) {
        Unit rep = u;
        rep.device.id = absl::StrCat(u.device.visible_id, "::", k);
        rep.device.replica = k;
        replicas.push_back(std::move(rep));
      }
    }
    if (replicas.empty()) {
      LOG_WARN("Sharing {}: none of the listed devices is on this node",
               r.name);
    }
    it->second = std::move(kept);
    std::vector<Unit>& dest = (*groups)[target];
    for (Unit& u : replicas) dest.push_back(std::move(u));
    (*info)[target] = {r.replicas, sharing.fail_requests_greater_than_one,
                       sharing.strategy, r.memory_per_replica};
  }
  return absl::OkStatus();
}

}  // namespace

bool Resource::SameDefinition(const Resource& o) const {
  if (name != o.name || socket_name != o.socket_name || sharing != o.sharing ||
      replicas != o.replicas ||
      fail_requests_greater_than_one != o.fail_requests_greater_than_one ||
      memory_per_replica != o.memory_per_replica ||
      devices.size() != o.devices.size()) {
    return false;
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].SameDefinition(o.devices[i])) return false;
  }
  return true;
}

std::string SocketNameFor(const std::string& resource_name) {
  std::string base = resource_name;
  if (base.rfind(kResourcePrefix, 0) == 0) {
    base = base.substr(sizeof(kResourcePrefix) - 1);
  }
  std::replace(base.begin(), base.end(), '/', '-');
  return absl::StrCat("nvidia-", base, ".sock");
}

absl::StatusOr<std::vector<Resource>> BuildResources(const NodeGpus& node,
                                                     const Config& config,
                                                     const MigCaps* mig_caps) {
  absl::StatusOr<Groups> groups = BaseGroups(node, config, mig_caps);
  if (!groups.ok()) return groups.status();
  std::map<std::string, SharedInfo> shared;
  if (absl::Status s = ApplySharing(config.sharing, &*groups, &shared);
      !s.ok()) {
    return s;
  }
  std::vector<Resource> out;
  for (auto& [name, units] : *groups) {
    if (units.empty()) continue;
    Resource r;
    r.name = name;
    r.socket_name = SocketNameFor(name);
    if (auto it = shared.find(name); it != shared.end()) {
      r.sharing = it->second.strategy;
      r.replicas = it->second.replicas;
      r.fail_requests_greater_than_one =
          it->second.fail_requests_greater_than_one;
      r.memory_per_replica = it->second.memory_per_replica;
    }
    for (Unit& u : units) r.devices.push_back(std::move(u.device));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gdp
