#include "labels/labels.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "util/logging.h"

namespace gdp {
namespace {

constexpr char kGpuResource[] = "nvidia.com/gpu";
constexpr uint64_t kMiB = uint64_t{1} << 20;

const char* StrategyName(SharingStrategy s) {
  switch (s) {
    case SharingStrategy::kTimeSlicing:
      return "time-slicing";
    case SharingStrategy::kMps:
      return "mps";
    case SharingStrategy::kNone:
      break;
  }
  return "none";
}

// The sharing strategy in effect: the configured one when some resource has
// more than one replica, else none.
SharingStrategy ActiveStrategy(const Sharing& sharing) {
  for (const SharedResource& r : sharing.resources) {
    if (r.replicas > 1) return sharing.strategy;
  }
  return SharingStrategy::kNone;
}

// The labels of one resource: "<resource>.<suffix>" = value.
class ResourceLabels {
 public:
  // `sharing` null: labelled as without sharing (replicas 0), as GFD does
  // for GPUs with MIG enabled.
  ResourceLabels(std::string resource, const Sharing* sharing, Labels* out)
      : resource_(std::move(resource)), sharing_(sharing), out_(out) {}

  template <typename T>
  void Set(absl::string_view suffix, const T& value) {
    (*out_)[absl::StrCat(resource_, ".", suffix)] = absl::StrCat(value);
  }

  // product, count, replicas and sharing-strategy; the product is `parts`
  // sanitised and joined with '-', plus "SHARED" when replicated and not
  // renamed.
  void Base(int count, const std::vector<std::string>& parts) {
    const int replicas = Replicas();
    Set("product", Product(parts, Shared() && !Renamed()));
    Set("count", count);
    Set("replicas", replicas);
    Set("sharing-strategy", sharing_ != nullptr && replicas > 1
                                ? StrategyName(ActiveStrategy(*sharing_))
                                : "none");
  }

  static std::string Product(const std::vector<std::string>& parts,
                             bool shared) {
    std::vector<std::string> kept;
    for (const std::string& p : parts) {
      if (!p.empty()) kept.push_back(SanitiseLabelValue(p));
    }
    if (shared) kept.push_back("SHARED");
    return absl::StrJoin(kept, "-");
  }

 private:
  const SharedResource* Replication() const {
    if (sharing_ == nullptr) return nullptr;
    for (const SharedResource& r : sharing_->resources) {
      if (r.name == resource_) return &r;
    }
    return nullptr;
  }
  int Replicas() const {
    if (sharing_ == nullptr) return 0;
    const SharedResource* r = Replication();
    return r != nullptr && r->replicas > 0 ? r->replicas : 1;
  }
  bool Shared() const {
    const SharedResource* r = Replication();
    return r != nullptr && r->replicas > 1;
  }
  // Advertised under another name (rename, or renameByDefault's .shared).
  bool Renamed() const {
    const SharedResource* r = Replication();
    return r != nullptr && AdvertisedName(*sharing_, *r) != r->name;
  }

  std::string resource_;
  const Sharing* sharing_;
  Labels* out_;
};

void FullGpuLabels(const GpuInfo& gpu, int count, const Sharing* sharing,
                   Labels* out) {
  ResourceLabels rl(kGpuResource, sharing, out);
  rl.Base(count, {gpu.name});
  if (uint64_t mib = gpu.memory_bytes / kMiB; mib != 0) rl.Set("memory", mib);
  if (gpu.cc_major != 0) {
    rl.Set("family", GpuFamily(gpu.cc_major, gpu.cc_minor));
    rl.Set("compute.major", gpu.cc_major);
    rl.Set("compute.minor", gpu.cc_minor);
  }
}

// A MIG device's name in labels: its profile with '+' as '.'
// ("1g.10gb+me" -> "1g.10gb.me").
std::string MigName(const MigInfo& mig) {
  return absl::StrReplaceAll(mig.profile, {{"+", "."}});
}

void MigLabels(const std::string& resource, const GpuInfo& parent,
               const MigInfo& mig, int count, const Sharing& sharing,
               Labels* out) {
  ResourceLabels rl(resource, &sharing, out);
  rl.Base(count, {parent.name, "MIG", MigName(mig)});
  rl.Set("memory", mig.memory_bytes / kMiB);
  rl.Set("multiprocessors", mig.multiprocessors);
  rl.Set("slices.gi", mig.gi_slices);
  rl.Set("slices.ci", mig.ci_slices);
  rl.Set("engines.copy", mig.copy_engines);
  rl.Set("engines.decoder", mig.decoders);
  rl.Set("engines.encoder", mig.encoders);
  rl.Set("engines.jpeg", mig.jpegs);
  rl.Set("engines.ofa", mig.ofas);
}

// GPUs of one model.
struct Model {
  const GpuInfo* first = nullptr;
  int count = 0;
};

// The nvidia.com/gpu.* labels. GPUs with MIG enabled are labelled without
// sharing, then full GPUs with it, each model in turn; the model written
// last wins (see ComputeLabels).
void GpuLabels(const NodeGpus& node, const Config& config, Labels* out) {
  std::map<std::string, int> counts;
  for (const GpuInfo& g : node.gpus) ++counts[g.name];
  if (counts.size() > 1) {
    std::vector<std::string> names;
    for (const auto& [name, n] : counts) names.push_back(name);
    LOG_WARN(
        "Multiple GPU models on the node ({}); nvidia.com/gpu.* labels "
        "describe one of them",
        absl::StrJoin(names, ", "));
  }
  for (bool mig_enabled : {true, false}) {
    std::vector<Model> models;
    for (const GpuInfo& g : node.gpus) {
      if (g.mig_enabled != mig_enabled) continue;
      auto same =
          std::find_if(models.begin(), models.end(),
                       [&](const Model& m) { return m.first->name == g.name; });
      if (same == models.end()) models.push_back({&g, counts[g.name]});
    }
    // Preferred last: most GPUs, then the lowest-indexed one.
    std::stable_sort(models.begin(), models.end(),
                     [](const Model& a, const Model& b) {
                       if (a.count != b.count) return a.count < b.count;
                       return a.first->index > b.first->index;
                     });
    for (const Model& m : models) {
      FullGpuLabels(*m.first, m.count, mig_enabled ? nullptr : &config.sharing,
                    out);
    }
  }
}

// MIG devices grouped by name, in order of first appearance.
struct MigGroup {
  const GpuInfo* parent = nullptr;
  const MigInfo* first = nullptr;
  int count = 0;
};

std::vector<std::pair<std::string, MigGroup>> MigGroups(const NodeGpus& node) {
  std::vector<std::pair<std::string, MigGroup>> groups;
  for (const GpuInfo& g : node.gpus) {
    if (!g.mig_enabled) continue;
    for (const MigInfo& m : g.migs) {
      const std::string name = MigName(m);
      auto same = std::find_if(groups.begin(), groups.end(),
                               [&](const auto& e) { return e.first == name; });
      if (same == groups.end()) {
        groups.push_back({name, MigGroup{&g, &m, 1}});
      } else {
        ++same->second.count;
      }
    }
  }
  return groups;
}

// GFD's labels when MIG single cannot describe the node.
void InvalidMigSingle(const GpuInfo& gpu, absl::string_view reason,
                      Labels* out) {
  LOG_WARN("Invalid configuration for mig-strategy=single: {}", reason);
  ResourceLabels rl(kGpuResource, nullptr, out);
  rl.Set("product", ResourceLabels::Product({gpu.name, "MIG", "INVALID"},
                                            /*shared=*/false));
  rl.Set("count", 0);
  rl.Set("replicas", 0);
  rl.Set("sharing-strategy", "");
  rl.Set("memory", 0);
}

void MigSingleLabels(const NodeGpus& node, const Config& config, Labels* out) {
  const GpuInfo* first_enabled = nullptr;
  bool any_empty = false, any_disabled = false;
  for (const GpuInfo& g : node.gpus) {
    if (!g.mig_enabled) {
      any_disabled = true;
      continue;
    }
    if (first_enabled == nullptr) first_enabled = &g;
    any_empty = any_empty || g.migs.empty();
  }
  if (first_enabled == nullptr) return;  // as mig-strategy none
  if (any_empty) {
    return InvalidMigSingle(*first_enabled,
                            "a GPU has MIG enabled but no MIG devices", out);
  }
  if (any_disabled) {
    return InvalidMigSingle(*first_enabled,
                            "GPUs with MIG enabled and disabled", out);
  }
  auto groups = MigGroups(node);
  if (groups.size() != 1) {
    return InvalidMigSingle(*first_enabled,
                            "more than one MIG profile on the node", out);
  }
  const MigGroup& g = groups.front().second;
  MigLabels(kGpuResource, *g.parent, *g.first, g.count, config.sharing, out);
}

void MigMixedLabels(const NodeGpus& node, const Config& config, Labels* out) {
  for (const auto& [name, g] : MigGroups(node)) {
    MigLabels(absl::StrCat(kResourcePrefix, "mig-", name), *g.parent, *g.first,
              g.count, config.sharing, out);
  }
}

}  // namespace

std::string SanitiseLabelValue(absl::string_view value) {
  std::string kept;
  for (char c : value) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
        c == '.' || c == ' ') {
      kept.push_back(c);
    }
  }
  return absl::StrJoin(absl::StrSplit(kept, ' ', absl::SkipEmpty()), "-");
}

std::string GpuFamily(int cc_major, int cc_minor) {
  switch (cc_major) {
    case 1:
      return "tesla";
    case 2:
      return "fermi";
    case 3:
      return "kepler";
    case 5:
      return "maxwell";
    case 6:
      return "pascal";
    case 7:
      return cc_minor < 5 ? "volta" : "turing";
    case 8:
      return cc_minor < 9 ? "ampere" : "ada-lovelace";
    case 9:
      return "hopper";
    case 10:
    case 12:
      return "blackwell";
    case 13:
      return "rubin";
  }
  return "undefined";
}

std::string GpuMode(const std::vector<absl::StatusOr<uint32_t>>& classes) {
  constexpr uint32_t kVgaController = 0x030000;
  constexpr uint32_t k3dController = 0x030200;
  if (classes.empty()) return "unknown";
  for (const absl::StatusOr<uint32_t>& c : classes) {
    if (!c.ok()) return "unknown";
  }
  const uint32_t first = *classes.front();
  for (const absl::StatusOr<uint32_t>& c : classes) {
    if (*c != first) return "unknown";
  }
  if (first == kVgaController) return "graphics";
  if (first == k3dController) return "compute";
  return "unknown";
}

absl::StatusOr<Labels> ComputeLabels(const NodeGpus& node, const Config& config,
                                     const NodeFacts& facts) {
  Labels out;
  if (facts.timestamp.has_value()) {
    out["nvidia.com/gfd.timestamp"] =
        absl::StrCat(absl::ToUnixSeconds(*facts.timestamp));
  }
  if (node.gpus.empty()) return out;

  out["nvidia.com/gpu.machine"] = SanitiseLabelValue(facts.machine_type);

  std::vector<std::string> driver = absl::StrSplit(node.driver_version, '.');
  if (driver.size() < 2 || driver.size() > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("driver version '", node.driver_version,
                     "' does not have the form X.Y[.Z]"));
  }
  const std::string revision = driver.size() > 2 ? driver[2] : "";
  const int cuda_major = node.cuda_driver_version / 1000;
  const int cuda_minor = node.cuda_driver_version % 1000 / 10;
  for (const char* prefix :
       {"nvidia.com/cuda.driver.", "nvidia.com/cuda.driver-version."}) {
    out[absl::StrCat(prefix, "major")] = driver[0];
    out[absl::StrCat(prefix, "minor")] = driver[1];
  }
  out["nvidia.com/cuda.driver.rev"] = revision;
  out["nvidia.com/cuda.driver-version.revision"] = revision;
  out["nvidia.com/cuda.driver-version.full"] = node.driver_version;
  for (const char* prefix :
       {"nvidia.com/cuda.runtime.", "nvidia.com/cuda.runtime-version."}) {
    out[absl::StrCat(prefix, "major")] = absl::StrCat(cuda_major);
    out[absl::StrCat(prefix, "minor")] = absl::StrCat(cuda_minor);
  }
  out["nvidia.com/cuda.runtime-version.full"] =
      absl::StrCat(cuda_major, ".", cuda_minor);

  const bool mig_capable =
      std::any_of(node.gpus.begin(), node.gpus.end(),
                  [](const GpuInfo& g) { return g.mig_capable; });
  out["nvidia.com/mig.capable"] = mig_capable ? "true" : "false";

  bool mps = ActiveStrategy(config.sharing) == SharingStrategy::kMps;
  if (mps) {
    for (const GpuInfo& g : node.gpus) {
      if (g.mig_enabled) {
        return absl::FailedPreconditionError(
            absl::StrCat("MPS sharing is not supported with MIG: GPU ", g.index,
                         " has MIG enabled"));
      }
    }
  }
  out["nvidia.com/mps.capable"] = mps ? "true" : "false";

  GpuLabels(node, config, &out);
  switch (config.mig_strategy) {
    case MigStrategy::kNone:
      break;
    case MigStrategy::kSingle:
      out["nvidia.com/mig.strategy"] = "single";
      MigSingleLabels(node, config, &out);
      break;
    case MigStrategy::kMixed:
      out["nvidia.com/mig.strategy"] = "mixed";
      MigMixedLabels(node, config, &out);
      break;
  }

  std::vector<absl::StatusOr<uint32_t>> classes = facts.pci_classes;
  while (classes.size() < node.gpus.size()) {
    classes.push_back(absl::NotFoundError("PCI class not read"));
  }
  classes.resize(node.gpus.size());
  out["nvidia.com/gpu.mode"] = GpuMode(classes);
  if (facts.pcie_degraded) out["nvidia.com/gpu.pcie-degraded"] = "true";
  if (facts.throttled) out["nvidia.com/gpu.throttled"] = "true";
  return out;
}

}  // namespace gdp
