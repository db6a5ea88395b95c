#include "cmd/gpu_layout.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

template <typename T>
const T* FindByUuid(const std::vector<T>& v, const std::string& uuid) {
  for (const T& x : v) {
    if (x.uuid == uuid) return &x;
  }
  return nullptr;
}

template <typename T>
T* FindByUuidMutable(std::vector<T>& v, const std::string& uuid) {
  for (T& x : v) {
    if (x.uuid == uuid) return &x;
  }
  return nullptr;
}

std::string MigName(const MigInfo& m) {
  return absl::StrCat("MIG device ", m.uuid, " (", m.profile, ")");
}

// Adds "<prefix><what> <a> -> <b>" to `out` when a != b.
template <typename T>
void Field(const std::string& prefix, const char* what, const T& a, const T& b,
           std::vector<std::string>& out) {
  if (a != b) out.push_back(absl::StrCat(prefix, what, " ", a, " -> ", b));
}

// Whether `g` can have its MIG devices made on demand: MIG enabled and
// its MIG profiles read (dynamic MIG).
bool Partitionable(const GpuInfo& g) {
  return g.mig_enabled && !g.mig_profiles.empty();
}

void MigChanges(const GpuInfo& before, const GpuInfo& after,
                const LayoutOptions& options, std::vector<std::string>& out) {
  const std::string gpu = absl::StrCat("GPU ", after.uuid, ": ");
  if (before.mig_enabled != after.mig_enabled) {
    out.push_back(
        absl::StrCat(gpu, "MIG ", after.mig_enabled ? "enabled" : "disabled"));
  } else if (after.mig_enabled && before.mig_profiles != after.mig_profiles) {
    // What the DRA side publishes of it with dynamic MIG: its profiles'
    // placements (every one, free or not, so they stay while the GPU
    // does), or its MIG devices when none were read.
    out.push_back(absl::StrCat(gpu, "MIG profiles ",
                               before.mig_profiles.empty()  ? "read"
                               : after.mig_profiles.empty() ? "not read"
                                                            : "changed"));
  }
  // Instances the DRA side makes and destroys are no change of the node.
  if (options.mig_on_demand.contains(after.uuid) && Partitionable(before) &&
      Partitionable(after)) {
    return;
  }
  // Only a MIG-enabled GPU's MIG devices are served.
  static const std::vector<MigInfo> kNone;
  const std::vector<MigInfo>& was = before.mig_enabled ? before.migs : kNone;
  const std::vector<MigInfo>& now = after.mig_enabled ? after.migs : kNone;
  for (const MigInfo& m : was) {
    if (FindByUuid(now, m.uuid) == nullptr) {
      out.push_back(absl::StrCat(gpu, MigName(m), " is gone"));
    }
  }
  for (const MigInfo& m : now) {
    const MigInfo* old = FindByUuid(was, m.uuid);
    if (old == nullptr) {
      out.push_back(absl::StrCat(gpu, MigName(m), " appeared"));
      continue;
    }
    const std::string mig = absl::StrCat(gpu, "MIG device ", m.uuid, ": ");
    Field(mig, "profile", old->profile, m.profile, out);
    Field(mig, "index", old->index, m.index, out);
    Field(mig, "GPU instance", old->gi, m.gi, out);
    Field(mig, "compute instance", old->ci, m.ci, out);
  }
}

}  // namespace

LayoutOptions MigMadeOnDemand(const NodeGpus& dra, bool dynamic_mig) {
  LayoutOptions out;
  if (!dynamic_mig) return out;
  for (const GpuInfo& g : dra.gpus) {
    if (Partitionable(g)) out.mig_on_demand.insert(g.uuid);
  }
  return out;
}

std::vector<std::string> LayoutChanges(const NodeGpus& before,
                                       const NodeGpus& after,
                                       const LayoutOptions& options) {
  std::vector<std::string> out;
  Field("", "driver version", before.driver_version, after.driver_version, out);
  for (const GpuInfo& g : before.gpus) {
    if (FindByUuid(after.gpus, g.uuid) == nullptr) {
      out.push_back(absl::StrCat("GPU ", g.uuid, " is gone"));
    }
  }
  for (const GpuInfo& g : after.gpus) {
    const GpuInfo* old = FindByUuid(before.gpus, g.uuid);
    if (old == nullptr) {
      out.push_back(absl::StrCat("GPU ", g.uuid, " appeared"));
      continue;
    }
    const std::string gpu = absl::StrCat("GPU ", g.uuid, ": ");
    Field(gpu, "index", old->index, g.index, out);
    Field(gpu, "minor", old->minor, g.minor, out);
    Field(gpu, "PCI bus id", old->pci_bus_id, g.pci_bus_id, out);
    Field(gpu, "name", old->name, g.name, out);
    MigChanges(*old, g, options, out);
  }
  return out;
}

NodeGpus KeepUndescribed(const NodeGpus& served, NodeGpus found) {
  std::vector<unsigned> gpu_slots;  // GPU slots left out, not yet claimed
  std::vector<std::pair<unsigned, unsigned>> mig_slots;  // (GPU, MIG)
  for (const LeftOut& u : found.unusable) {
    if (u.mig.has_value()) {
      mig_slots.emplace_back(u.gpu, *u.mig);
    } else {
      gpu_slots.push_back(u.gpu);
    }
  }
  if (gpu_slots.empty() && mig_slots.empty()) return found;
  std::sort(gpu_slots.begin(), gpu_slots.end());
  gpu_slots.erase(std::unique(gpu_slots.begin(), gpu_slots.end()),
                  gpu_slots.end());

  // Served GPUs that `found` lacks, in served order (by index), and those
  // it has, for their MIG devices.
  std::vector<const GpuInfo*> lacking;
  for (const GpuInfo& g : served.gpus) {
    GpuInfo* now = FindByUuidMutable(found.gpus, g.uuid);
    if (now == nullptr) {
      lacking.push_back(&g);
      continue;
    }
    if (now->mig_enabled != g.mig_enabled || !g.mig_enabled) continue;
    bool added = false;
    for (const MigInfo& m : g.migs) {
      if (FindByUuid(now->migs, m.uuid) != nullptr) continue;
      if (std::find(mig_slots.begin(), mig_slots.end(),
                    std::make_pair(now->index, m.index)) == mig_slots.end()) {
        continue;
      }
      now->migs.push_back(m);
      added = true;
    }
    if (added) {
      std::stable_sort(
          now->migs.begin(), now->migs.end(),
          [](const MigInfo& a, const MigInfo& b) { return a.index < b.index; });
    }
  }
  // NVML numbers GPUs in PCI bus order, so a GPU can be in slot `slot`
  // only if it sorts between the GPUs described around it.
  const std::vector<GpuInfo> described = found.gpus;
  auto fits = [&described](const GpuInfo& g, unsigned slot) {
    return std::all_of(described.begin(), described.end(),
                       [&](const GpuInfo& d) {
                         return d.index < slot ? d.pci_bus_id < g.pci_bus_id
                                               : g.pci_bus_id < d.pci_bus_id;
                       });
  };
  // A lacking GPU served at a slot left out is the GPU there.
  std::vector<const GpuInfo*> unplaced;
  for (const GpuInfo* g : lacking) {
    auto slot = std::find(gpu_slots.begin(), gpu_slots.end(), g->index);
    if (slot == gpu_slots.end() || !fits(*g, g->index)) {
      unplaced.push_back(g);
      continue;
    }
    found.gpus.push_back(*g);
    gpu_slots.erase(slot);
  }
  // The indices moved (a GPU before it went or came): each slot left over
  // is taken by the first lacking GPU left over that fits there, in index
  // order, which takes the slot's index.
  for (unsigned slot : gpu_slots) {
    auto g = std::find_if(unplaced.begin(), unplaced.end(),
                          [&](const GpuInfo* u) { return fits(*u, slot); });
    if (g == unplaced.end()) continue;
    found.gpus.push_back(**g);
    found.gpus.back().index = slot;
    unplaced.erase(g);
  }
  std::stable_sort(
      found.gpus.begin(), found.gpus.end(),
      [](const GpuInfo& a, const GpuInfo& b) { return a.index < b.index; });
  return found;
}

}  // namespace gdp
