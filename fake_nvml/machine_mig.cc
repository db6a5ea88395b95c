// ParseGpuInstances: the MIG layout of one GPU entry.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fake_nvml/machine_parse.h"
#include "fake_nvml/mig_profiles.h"
#include "fake_nvml/yaml_reader.h"

namespace gdp::fake_nvml {
namespace {

// One GPU instance entry as written, before placement.
struct Entry {
  GpuInstance instance;
  std::optional<unsigned> start;  // given placement
  int line = 1;
  int placement_line = 1;
  std::string field;
};

std::string SliceRange(unsigned start, unsigned size) {
  return size == 1
             ? absl::StrCat("memory slice ", start)
             : absl::StrCat("memory slices ", start, "-", start + size - 1);
}

std::vector<ComputeInstance> ParseComputeInstances(const YAML::Node& node,
                                                   const std::string& field,
                                                   const GiProfile& gi) {
  std::vector<ComputeInstance> out;
  std::vector<YAML::Node> items = ParseSequence(node, field);
  unsigned used = 0;
  for (size_t c = 0; c < items.size(); ++c) {
    YamlMap map(items[c], absl::StrCat(field, "[", c, "]"));
    const YAML::Node profile_node = map.Required("profile");
    const std::string name =
        ParseString(profile_node, map.FieldPath("profile"));
    std::optional<CiProfile> profile = FindCiProfileByName(gi, name);
    if (!profile.has_value()) {
      throw FieldError(
          LineOf(profile_node), map.FieldPath("profile"),
          absl::StrCat("unknown compute instance profile \"", name, "\" for a ",
                       gi.name, " GPU instance (known: ", KnownCiProfiles(gi),
                       ")"));
    }
    bool busy = false;
    if (auto b = map.Optional("busy"))
      busy = ParseBool(*b, map.FieldPath("busy"));
    map.Finish();
    if (used + profile->slices > gi.slices) {
      throw FieldError(
          LineOf(items[c]), map.FieldPath("profile"),
          absl::StrCat("the compute instances need ", used + profile->slices,
                       " compute slices; a ", gi.name, " GPU instance has ",
                       gi.slices));
    }
    ComputeInstance ci;
    ci.profile = *std::move(profile);
    ci.id = static_cast<unsigned>(c);
    ci.start = used;
    ci.busy = busy;
    used += ci.profile.slices;
    out.push_back(std::move(ci));
  }
  return out;
}

Entry ParseEntry(const YAML::Node& node, const std::string& field,
                 const Gpu& gpu) {
  YamlMap map(node, field);
  Entry entry;
  entry.line = LineOf(node);
  entry.field = field;
  const YAML::Node profile_node = map.Required("profile");
  const std::string name = ParseString(profile_node, map.FieldPath("profile"));
  const GiProfile* profile = FindGiProfileByName(*gpu.mig_product, name);
  if (profile == nullptr) {
    std::vector<std::string> known;
    for (const GiProfile& p : gpu.mig_product->profiles)
      known.push_back(p.name);
    throw FieldError(
        LineOf(profile_node), map.FieldPath("profile"),
        absl::StrCat("unknown GPU instance profile \"", name, "\" for ",
                     gpu.name, " (known: ", absl::StrJoin(known, ", "), ")"));
  }
  entry.instance.profile = profile;
  if (auto placement = map.Optional("placement")) {
    entry.placement_line = LineOf(*placement);
    const unsigned start = static_cast<unsigned>(
        ParseUint(*placement, map.FieldPath("placement"), kMemorySlices - 1));
    const std::vector<unsigned> starts = PlacementStarts(*profile);
    if (std::find(starts.begin(), starts.end(), start) == starts.end()) {
      throw FieldError(
          entry.placement_line, map.FieldPath("placement"),
          absl::StrCat("placement ", start, " is not valid for ", profile->name,
                       " (valid: ", absl::StrJoin(starts, ", "), ")"));
    }
    entry.start = start;
  }
  if (auto cis = map.Optional("compute_instances")) {
    entry.instance.compute_instances = ParseComputeInstances(
        *cis, map.FieldPath("compute_instances"), *profile);
  } else {
    ComputeInstance whole;
    whole.profile = WholeCiProfile(*profile);
    entry.instance.compute_instances.push_back(std::move(whole));
  }
  map.Finish();
  return entry;
}

// Places entries[i..] that have no given placement, in order, each at the
// lowest free start that lets the rest be placed too. `used` is a bit mask
// of occupied memory slices.
bool Place(std::vector<Entry>& entries, size_t i, unsigned used) {
  while (i < entries.size() && entries[i].start.has_value()) ++i;
  if (i == entries.size()) return true;
  Entry& entry = entries[i];
  const unsigned size = entry.instance.profile->memory_slices;
  for (unsigned start : PlacementStarts(*entry.instance.profile)) {
    const unsigned mask = ((1u << size) - 1) << start;
    if ((used & mask) != 0) continue;
    entry.instance.start = start;
    if (Place(entries, i + 1, used | mask)) return true;
  }
  return false;
}

}  // namespace

void ParseGpuInstances(YamlMap& map, Gpu* gpu) {
  gpu->mig_product = FindMigProduct(gpu->name);
  std::optional<YAML::Node> node = map.Optional("gpu_instances");
  if (!node.has_value()) return;
  const std::string field = map.FieldPath("gpu_instances");
  const int line = LineOf(*node);
  if (gpu->mig_current != NVML_DEVICE_MIG_ENABLE) {
    throw FieldError(line, field, "GPU instances need mig_mode: enabled");
  }
  if (gpu->mig_product == nullptr) {
    throw FieldError(
        line, field,
        absl::StrCat("the fake has no MIG profiles for \"", gpu->name,
                     "\" (known: ", KnownMigProducts(), ")"));
  }
  std::vector<YAML::Node> items = ParseSequence(*node, field);
  if (items.size() > kMaxMigDevices) {
    throw FieldError(
        line, field,
        absl::StrCat("at most ", kMaxMigDevices, " GPU instances per GPU"));
  }
  std::vector<Entry> entries;
  unsigned compute_slices = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    entries.push_back(
        ParseEntry(items[i], absl::StrCat(field, "[", i, "]"), *gpu));
    const GiProfile& profile = *entries.back().instance.profile;
    compute_slices += profile.slices;
    const auto same = std::count_if(
        entries.begin(), entries.end(),
        [&](const Entry& e) { return e.instance.profile == &profile; });
    if (static_cast<unsigned>(same) > profile.instance_count) {
      throw FieldError(
          entries.back().line, entries.back().field + ".profile",
          absl::StrCat("at most ", profile.instance_count,
                       " GPU instance(s) of ", profile.name, " fit one GPU"));
    }
  }
  if (compute_slices > kComputeSlices) {
    throw FieldError(
        line, field,
        absl::StrCat("the GPU instances need ", compute_slices,
                     " compute slices; the GPU has ", kComputeSlices));
  }
  // Given placements first: they must not overlap.
  unsigned used = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    Entry& entry = entries[i];
    if (!entry.start.has_value()) continue;
    const unsigned size = entry.instance.profile->memory_slices;
    const unsigned mask = ((1u << size) - 1) << *entry.start;
    if ((used & mask) != 0) {
      for (size_t j = 0; j < i; ++j) {
        const Entry& other = entries[j];
        if (!other.start.has_value()) continue;
        const unsigned other_size = other.instance.profile->memory_slices;
        if (*entry.start < *other.start + other_size &&
            *other.start < *entry.start + size) {
          throw FieldError(
              entry.placement_line, entry.field + ".placement",
              absl::StrCat("placement ", *entry.start, " overlaps ",
                           other.field, " (",
                           SliceRange(*other.start, other_size), ")"));
        }
      }
    }
    used |= mask;
    entry.instance.start = *entry.start;
  }
  if (!Place(entries, 0, used)) {
    throw FieldError(
        line, field,
        absl::StrCat("the GPU instances do not fit the GPU's ", kMemorySlices,
                     " memory slices in any placement"));
  }
  for (Entry& entry : entries) {
    entry.instance.id = GpuInstanceId(entry.instance.start,
                                      entry.instance.profile->memory_slices);
    gpu->gpu_instances.push_back(std::move(entry.instance));
  }
  std::sort(
      gpu->gpu_instances.begin(), gpu->gpu_instances.end(),
      [](const GpuInstance& a, const GpuInstance& b) { return a.id < b.id; });
  for (unsigned g = 0; g < gpu->gpu_instances.size(); ++g) {
    const GpuInstance& gi = gpu->gpu_instances[g];
    for (unsigned c = 0; c < gi.compute_instances.size(); ++c) {
      gpu->mig_devices.push_back(
          {g, c, MigUuid(gpu->uuid, gi.id, gi.compute_instances[c].id)});
    }
  }
}

}  // namespace gdp::fake_nvml
