#include "cmd/gpu_layout.h"

#include <algorithm>
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

std::string MigName(const MigInfo& m) {
  return absl::StrCat("MIG device ", m.uuid, " (", m.profile, ")");
}

// Adds "<prefix><what> <a> -> <b>" to `out` when a != b.
template <typename T>
void Field(const std::string& prefix, const char* what, const T& a, const T& b,
           std::vector<std::string>& out) {
  if (a != b) out.push_back(absl::StrCat(prefix, what, " ", a, " -> ", b));
}

void MigChanges(const GpuInfo& before, const GpuInfo& after,
                std::vector<std::string>& out) {
  const std::string gpu = absl::StrCat("GPU ", after.uuid, ": ");
  if (before.mig_enabled != after.mig_enabled) {
    out.push_back(
        absl::StrCat(gpu, "MIG ", after.mig_enabled ? "enabled" : "disabled"));
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

std::vector<std::string> LayoutChanges(const NodeGpus& before,
                                       const NodeGpus& after) {
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
    MigChanges(*old, g, out);
  }
  return out;
}

NodeGpus KeepUndescribed(const NodeGpus& served, NodeGpus found) {
  if (found.unusable.empty()) return found;
  for (const GpuInfo& g : served.gpus) {
    GpuInfo* now = nullptr;
    for (GpuInfo& f : found.gpus) {
      if (f.uuid == g.uuid) now = &f;
    }
    if (now == nullptr) {
      found.gpus.push_back(g);
      continue;
    }
    if (now->mig_enabled != g.mig_enabled || !g.mig_enabled) continue;
    bool added = false;
    for (const MigInfo& m : g.migs) {
      if (FindByUuid(now->migs, m.uuid) == nullptr) {
        now->migs.push_back(m);
        added = true;
      }
    }
    if (added) {
      std::stable_sort(
          now->migs.begin(), now->migs.end(),
          [](const MigInfo& a, const MigInfo& b) { return a.index < b.index; });
    }
  }
  std::stable_sort(
      found.gpus.begin(), found.gpus.end(),
      [](const GpuInfo& a, const GpuInfo& b) { return a.index < b.index; });
  return found;
}

}  // namespace gdp
