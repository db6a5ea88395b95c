#include "resources/device_api.h"

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/names.h"
#include "util/logging.h"

namespace gdp {
namespace {

// A GPU, or one MIG device of it, by position in NodeGpus.
struct UnitRef {
  size_t gpu = 0;
  std::optional<size_t> mig;  // position in GpuInfo::migs
};

// What `ref` names on `node` (as sharing's devices do), or nullopt.
std::optional<UnitRef> Resolve(const NodeGpus& node, const std::string& ref) {
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuInfo& g = node.gpus[i];
    if (ref == absl::StrCat(g.index) || ref == g.uuid) return UnitRef{i, {}};
    for (size_t j = 0; j < g.migs.size(); ++j) {
      const MigInfo& m = g.migs[j];
      if (ref == absl::StrCat(g.index, ":", m.index) || ref == m.uuid ||
          ref == absl::StrCat("MIG-", g.uuid, "/", m.gi, "/", m.ci)) {
        return UnitRef{i, j};
      }
    }
  }
  return std::nullopt;
}

// What DRA takes of one GPU.
struct Pick {
  bool whole = false;
  std::set<size_t> migs;  // positions in GpuInfo::migs, when not whole
  bool any() const { return whole || !migs.empty(); }
};

std::vector<Pick> PickForDra(const NodeGpus& node,
                             const std::optional<SharedDevices>& devices) {
  std::vector<Pick> picks(node.gpus.size());
  const SharedDevices all;
  const SharedDevices& d = devices.has_value() ? *devices : all;
  switch (d.kind) {
    case SharedDevices::Kind::kAll:
      for (Pick& p : picks) p.whole = true;
      break;
    case SharedDevices::Kind::kCount:
      for (size_t i = 0; i < picks.size() && i < static_cast<size_t>(d.count);
           ++i) {
        picks[i].whole = true;
      }
      break;
    case SharedDevices::Kind::kList:
      for (size_t k = 0; k < d.list.size(); ++k) {
        std::optional<UnitRef> u = Resolve(node, d.list[k]);
        if (!u.has_value()) {
          LOG_WARN(
              "dra.devices[{}]: '{}' names no GPU or MIG device of this "
              "node; skipped",
              k, d.list[k]);
          continue;
        }
        if (u->mig.has_value()) {
          picks[u->gpu].migs.insert(*u->mig);
        } else {
          picks[u->gpu].whole = true;
        }
      }
      break;
  }
  for (Pick& p : picks) {
    if (p.whole) p.migs.clear();
  }
  return picks;
}

std::string GpuLabel(const GpuInfo& g) {
  return absl::StrCat("GPU ", g.index, " (", g.uuid, ")");
}

// A sharing entry must not list a unit DRA serves (in part or whole).
absl::Status CheckSharing(const NodeGpus& node, const Config& c,
                          const std::vector<Pick>& picks) {
  const std::string base(c.sharing.strategy == SharingStrategy::kMps
                             ? "sharing.mps"
                             : "sharing.timeSlicing");
  for (size_t i = 0; i < c.sharing.resources.size(); ++i) {
    const SharedDevices& d = c.sharing.resources[i].devices;
    if (d.kind != SharedDevices::Kind::kList) continue;
    for (size_t k = 0; k < d.list.size(); ++k) {
      std::optional<UnitRef> u = Resolve(node, d.list[k]);
      if (!u.has_value()) continue;
      const Pick& p = picks[u->gpu];
      const bool taken =
          p.whole ||
          (u->mig.has_value() ? p.migs.contains(*u->mig) : !p.migs.empty());
      if (taken) {
        return absl::InvalidArgumentError(absl::StrCat(
            base, ".resources[", i, "].devices[", k, "]: '", d.list[k],
            "' names ", GpuLabel(node.gpus[u->gpu]),
            ", which DRA serves (dra.devices); a GPU is served by one API "
            "only"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DeviceApiSplit> SplitDeviceApis(const NodeGpus& node,
                                               const Config& c) {
  DeviceApiSplit out;
  for (NodeGpus* part : {&out.device_plugin, &out.dra}) {
    part->driver_version = node.driver_version;
    part->cuda_driver_version = node.cuda_driver_version;
  }
  out.device_plugin.unusable = node.unusable;
  if (!c.ServesDra()) {
    out.device_plugin.gpus = node.gpus;
    return out;
  }
  const std::vector<Pick> picks = PickForDra(node, c.dra.devices);
  const bool both = c.device_api == DeviceApi::kBoth;
  if (both) {
    if (absl::Status s = CheckSharing(node, c, picks); !s.ok()) return s;
  }
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuInfo& g = node.gpus[i];
    const Pick& p = picks[i];
    if (p.whole) {
      out.dra.gpus.push_back(g);
      continue;
    }
    if (!p.migs.empty()) {
      if (c.feature_gates.dynamic_mig && g.mig_enabled) {
        const MigInfo& m = g.migs[*p.migs.begin()];
        return absl::InvalidArgumentError(absl::StrCat(
            "dra.devices: MIG device ", g.index, ":", m.index, " (", m.uuid,
            ") of ", GpuLabel(g),
            " goes to DRA alone, but with feature gate DynamicMIG DRA "
            "partitions a MIG-enabled GPU whole, on demand, so the GPU must "
            "be DRA's alone; name the whole GPU in dra.devices, or none of "
            "its MIG devices"));
      }
      if (both && c.mig_strategy == MigStrategy::kNone) {
        const MigInfo& m = g.migs[*p.migs.begin()];
        return absl::InvalidArgumentError(absl::StrCat(
            "dra.devices: MIG device ", g.index, ":", m.index, " (", m.uuid,
            ") of ", GpuLabel(g),
            " goes to DRA, but the device plugin offers that GPU whole "
            "(MIG strategy none); name the whole GPU, or use MIG strategy "
            "single or mixed"));
      }
      GpuInfo to_dra = g;
      GpuInfo kept = g;
      to_dra.migs.clear();
      kept.migs.clear();
      for (size_t j = 0; j < g.migs.size(); ++j) {
        (p.migs.contains(j) ? to_dra : kept).migs.push_back(g.migs[j]);
      }
      out.dra.gpus.push_back(std::move(to_dra));
      if (both) out.device_plugin.gpus.push_back(std::move(kept));
      continue;
    }
    if (both) {
      out.device_plugin.gpus.push_back(g);
    } else {
      LOG_INFO(
          "{} is not in dra.devices and the device API is dra: not "
          "served",
          GpuLabel(g));
    }
  }
  return out;
}

}  // namespace gdp
