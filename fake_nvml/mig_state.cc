#include "fake_nvml/mig_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fake_nvml/shared_file.h"

namespace gdp::fake_nvml {
namespace {

constexpr char kHeader[] =
    "# fake NVML MIG state: gpu <uuid> <current> <pending> | gi <uuid> <id> "
    "<profile id> <start> | ci <uuid> <gi id> <id> <profile> <start> <busy>";

unsigned Mask(unsigned start, unsigned size) {
  return ((1u << size) - 1) << start;
}

unsigned UsedMemorySlices(const Gpu& gpu) {
  unsigned used = 0;
  for (const GpuInstance& gi : gpu.gpu_instances) {
    used |= Mask(gi.start, gi.profile->memory_slices);
  }
  return used;
}

unsigned UsedComputeSlices(const Gpu& gpu) {
  unsigned used = 0;
  for (const GpuInstance& gi : gpu.gpu_instances) used += gi.profile->slices;
  return used;
}

unsigned UsedCiSlices(const GpuInstance& gi) {
  unsigned used = 0;
  for (const ComputeInstance& ci : gi.compute_instances) {
    used |= Mask(ci.start, ci.profile.slices);
  }
  return used;
}

bool MigEnabled(const Gpu& gpu) {
  return gpu.mig_capable && gpu.mig_product != nullptr &&
         gpu.mig_current == NVML_DEVICE_MIG_ENABLE;
}

GpuInstance* FindGi(Gpu* gpu, unsigned id) {
  for (GpuInstance& gi : gpu->gpu_instances) {
    if (gi.id == id) return &gi;
  }
  return nullptr;
}

void SortInstances(Gpu* gpu) {
  for (GpuInstance& gi : gpu->gpu_instances) {
    std::sort(gi.compute_instances.begin(), gi.compute_instances.end(),
              [](const ComputeInstance& a, const ComputeInstance& b) {
                return a.id < b.id;
              });
  }
  std::sort(
      gpu->gpu_instances.begin(), gpu->gpu_instances.end(),
      [](const GpuInstance& a, const GpuInstance& b) { return a.id < b.id; });
}

// Parses `text` into the MIG state of `machine`'s GPUs (by index).
absl::Status Parse(const std::string& path, const std::string& text,
                   Machine* machine) {
  std::map<std::string, unsigned> by_uuid;
  for (unsigned i = 0; i < machine->gpus.size(); ++i) {
    if (machine->gpus[i].mig_capable) by_uuid[machine->gpus[i].uuid] = i;
  }
  std::map<unsigned, Gpu> parsed;  // GPU index -> its new MIG state
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<absl::string_view> parts =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    auto bad = [&](absl::string_view why) {
      return absl::DataLossError(
          absl::StrCat("MIG state file ", path, ":", line_number, ": ", why));
    };
    if (parts.size() < 2) return bad("malformed entry");
    const auto it = by_uuid.find(std::string(parts[1]));
    if (it == by_uuid.end()) continue;
    unsigned n[5] = {0, 0, 0, 0, 0};
    for (size_t k = 2; k < parts.size() && k < 7; ++k) {
      if (!absl::SimpleAtoi(parts[k], &n[k - 2])) return bad("not a number");
    }
    if (parts[0] == "gpu") {
      if (parts.size() != 4 || n[0] > 1 || n[1] > 1)
        return bad("malformed gpu");
      Gpu& gpu = parsed[it->second];
      gpu.mig_current = n[0];
      gpu.mig_pending = n[1];
    } else if (parts[0] == "gi") {
      if (parts.size() != 5) return bad("malformed gi");
      const auto p = parsed.find(it->second);
      if (p == parsed.end()) return bad("gi before its gpu");
      const Gpu& base = machine->gpus[it->second];
      const GiProfile* profile = FindGiProfileById(*base.mig_product, n[1]);
      if (profile == nullptr) return bad("unknown GPU instance profile");
      if (n[2] >= kMemorySlices ||
          n[0] != GpuInstanceId(n[2], profile->memory_slices) ||
          p->second.gpu_instances.size() >= kMaxMigDevices) {
        return bad("bad GPU instance");
      }
      GpuInstance gi;
      gi.profile = profile;
      gi.id = n[0];
      gi.start = n[2];
      p->second.gpu_instances.push_back(std::move(gi));
    } else if (parts[0] == "ci") {
      if (parts.size() != 7 || n[4] > 1) return bad("malformed ci");
      const auto p = parsed.find(it->second);
      if (p == parsed.end()) return bad("ci before its gpu");
      GpuInstance* gi = FindGi(&p->second, n[0]);
      if (gi == nullptr) return bad("ci of an unknown GPU instance");
      std::optional<CiProfile> profile = FindCiProfile(*gi->profile, n[2]);
      if (!profile.has_value() || n[1] >= kMaxComputeInstanceIds ||
          n[3] + profile->slices > gi->profile->slices ||
          gi->compute_instances.size() >= kMaxComputeInstanceIds) {
        return bad("bad compute instance");
      }
      ComputeInstance ci;
      ci.profile = *std::move(profile);
      ci.id = n[1];
      ci.start = n[3];
      ci.busy = n[4] == 1;
      gi->compute_instances.push_back(std::move(ci));
    } else {
      return bad("unknown entry");
    }
  }
  for (auto& [index, state] : parsed) {
    Gpu& gpu = machine->gpus[index];
    gpu.mig_current = state.mig_current;
    gpu.mig_pending = state.mig_pending;
    gpu.gpu_instances = std::move(state.gpu_instances);
    SortInstances(&gpu);
    RebuildMigDevices(&gpu);
  }
  return absl::OkStatus();
}

std::string Format(const Machine& machine) {
  std::string out = absl::StrCat(kHeader, "\n");
  for (const Gpu& gpu : machine.gpus) {
    if (!gpu.mig_capable || gpu.mig_product == nullptr) continue;
    absl::StrAppend(&out, "gpu ", gpu.uuid, " ", gpu.mig_current, " ",
                    gpu.mig_pending, "\n");
    for (const GpuInstance& gi : gpu.gpu_instances) {
      absl::StrAppend(&out, "gi ", gpu.uuid, " ", gi.id, " ", gi.profile->id,
                      " ", gi.start, "\n");
    }
    for (const GpuInstance& gi : gpu.gpu_instances) {
      for (const ComputeInstance& ci : gi.compute_instances) {
        absl::StrAppend(&out, "ci ", gpu.uuid, " ", gi.id, " ", ci.id, " ",
                        ci.profile.profile, " ", ci.start, " ", ci.busy ? 1 : 0,
                        "\n");
      }
    }
  }
  return out;
}

}  // namespace

void RebuildMigDevices(Gpu* gpu) {
  gpu->mig_devices.clear();
  for (unsigned g = 0; g < gpu->gpu_instances.size(); ++g) {
    const GpuInstance& gi = gpu->gpu_instances[g];
    for (unsigned c = 0; c < gi.compute_instances.size(); ++c) {
      gpu->mig_devices.push_back(
          {g, c, MigUuid(gpu->uuid, gi.id, gi.compute_instances[c].id)});
    }
  }
}

std::vector<unsigned> ComputeInstanceStarts(const GiProfile& gi,
                                            const CiProfile& ci) {
  std::vector<unsigned> starts;
  for (unsigned s = 0; s + ci.slices <= gi.slices; s += ci.slices) {
    starts.push_back(s);
  }
  return starts;
}

unsigned RemainingGpuInstances(const Gpu& gpu, const GiProfile& profile) {
  if (!MigEnabled(gpu)) return 0;
  unsigned same = 0;
  for (const GpuInstance& gi : gpu.gpu_instances) {
    if (gi.profile == &profile) ++same;
  }
  const unsigned by_count =
      profile.instance_count > same ? profile.instance_count - same : 0;
  const unsigned compute_used = UsedComputeSlices(gpu);
  const unsigned by_compute =
      compute_used >= kComputeSlices
          ? 0
          : (kComputeSlices - compute_used) / profile.slices;
  unsigned used = UsedMemorySlices(gpu);
  unsigned free = 0;
  for (unsigned start : PlacementStarts(profile)) {
    const unsigned mask = Mask(start, profile.memory_slices);
    if ((used & mask) != 0) continue;
    used |= mask;
    ++free;
  }
  return std::min({by_count, by_compute, free});
}

unsigned RemainingComputeInstances(const GpuInstance& gi, const CiProfile& ci) {
  unsigned used = UsedCiSlices(gi);
  unsigned free = 0;
  for (unsigned start : ComputeInstanceStarts(*gi.profile, ci)) {
    const unsigned mask = Mask(start, ci.slices);
    if ((used & mask) != 0) continue;
    used |= mask;
    ++free;
  }
  const unsigned left =
      kMaxComputeInstanceIds > gi.compute_instances.size()
          ? kMaxComputeInstanceIds - gi.compute_instances.size()
          : 0;
  return std::min(free, left);
}

nvmlReturn_t CreateGpuInstance(Gpu* gpu, const GiProfile& profile,
                               std::optional<unsigned> start, unsigned* id) {
  if (!MigEnabled(*gpu)) return NVML_ERROR_NOT_SUPPORTED;
  const std::vector<unsigned> starts = PlacementStarts(profile);
  if (start.has_value() &&
      std::find(starts.begin(), starts.end(), *start) == starts.end()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned same = 0;
  for (const GpuInstance& gi : gpu->gpu_instances) {
    if (gi.profile == &profile) ++same;
  }
  if (same >= profile.instance_count ||
      gpu->gpu_instances.size() >= kMaxMigDevices ||
      UsedComputeSlices(*gpu) + profile.slices > kComputeSlices) {
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  const unsigned used = UsedMemorySlices(*gpu);
  std::optional<unsigned> chosen;
  for (unsigned s : starts) {
    if (start.has_value() && s != *start) continue;
    if ((used & Mask(s, profile.memory_slices)) != 0) continue;
    chosen = s;
    break;
  }
  if (!chosen.has_value()) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  GpuInstance gi;
  gi.profile = &profile;
  gi.start = *chosen;
  gi.id = GpuInstanceId(*chosen, profile.memory_slices);
  *id = gi.id;
  gpu->gpu_instances.push_back(std::move(gi));
  SortInstances(gpu);
  RebuildMigDevices(gpu);
  return NVML_SUCCESS;
}

nvmlReturn_t DestroyGpuInstance(Gpu* gpu, unsigned id) {
  GpuInstance* gi = FindGi(gpu, id);
  if (gi == nullptr) return NVML_ERROR_NOT_FOUND;
  if (!gi->compute_instances.empty()) return NVML_ERROR_IN_USE;
  gpu->gpu_instances.erase(gpu->gpu_instances.begin() +
                           (gi - gpu->gpu_instances.data()));
  RebuildMigDevices(gpu);
  return NVML_SUCCESS;
}

nvmlReturn_t CreateComputeInstance(Gpu* gpu, unsigned gi_id,
                                   const CiProfile& profile,
                                   std::optional<unsigned> start,
                                   unsigned* ci_id) {
  GpuInstance* gi = FindGi(gpu, gi_id);
  if (gi == nullptr) return NVML_ERROR_NOT_FOUND;
  const std::vector<unsigned> starts =
      ComputeInstanceStarts(*gi->profile, profile);
  if (start.has_value() &&
      std::find(starts.begin(), starts.end(), *start) == starts.end()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const unsigned used = UsedCiSlices(*gi);
  std::optional<unsigned> chosen;
  for (unsigned s : starts) {
    if (start.has_value() && s != *start) continue;
    if ((used & Mask(s, profile.slices)) != 0) continue;
    chosen = s;
    break;
  }
  if (!chosen.has_value()) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  unsigned id = 0;
  for (;; ++id) {
    if (id >= kMaxComputeInstanceIds) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    if (std::none_of(gi->compute_instances.begin(), gi->compute_instances.end(),
                     [&](const ComputeInstance& ci) { return ci.id == id; })) {
      break;
    }
  }
  ComputeInstance ci;
  ci.profile = profile;
  ci.id = id;
  ci.start = *chosen;
  gi->compute_instances.push_back(std::move(ci));
  *ci_id = id;
  SortInstances(gpu);
  RebuildMigDevices(gpu);
  return NVML_SUCCESS;
}

nvmlReturn_t DestroyComputeInstance(Gpu* gpu, unsigned gi_id, unsigned ci_id) {
  GpuInstance* gi = FindGi(gpu, gi_id);
  if (gi == nullptr) return NVML_ERROR_NOT_FOUND;
  auto& cis = gi->compute_instances;
  const auto it =
      std::find_if(cis.begin(), cis.end(),
                   [&](const ComputeInstance& ci) { return ci.id == ci_id; });
  if (it == cis.end()) return NVML_ERROR_NOT_FOUND;
  if (it->busy) return NVML_ERROR_IN_USE;
  cis.erase(it);
  RebuildMigDevices(gpu);
  return NVML_SUCCESS;
}

nvmlReturn_t SetComputeInstanceBusy(Gpu* gpu, unsigned gi_id, unsigned ci_id,
                                    bool busy) {
  GpuInstance* gi = FindGi(gpu, gi_id);
  if (gi == nullptr) return NVML_ERROR_NOT_FOUND;
  for (ComputeInstance& ci : gi->compute_instances) {
    if (ci.id != ci_id) continue;
    ci.busy = busy;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t SetMigMode(Gpu* gpu, unsigned mode, nvmlReturn_t* activation) {
  if (!gpu->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  if (mode != NVML_DEVICE_MIG_ENABLE && mode != NVML_DEVICE_MIG_DISABLE) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  gpu->mig_pending = mode;
  if (mode != gpu->mig_current && !gpu->gpu_instances.empty()) {
    *activation = NVML_ERROR_IN_USE;
    return NVML_SUCCESS;
  }
  ResetMigMode(gpu);
  *activation = NVML_SUCCESS;
  return NVML_SUCCESS;
}

void ResetMigMode(Gpu* gpu) {
  if (gpu->mig_current == gpu->mig_pending) return;
  gpu->mig_current = gpu->mig_pending;
  gpu->gpu_instances.clear();
  gpu->mig_devices.clear();
}

std::optional<std::string> MigStatePath(absl::string_view mig_state_env,
                                        absl::string_view control_env) {
  if (!mig_state_env.empty()) return std::string(mig_state_env);
  if (control_env.empty()) return std::nullopt;
  const size_t slash = control_env.rfind('/');
  if (slash == absl::string_view::npos) return std::string("mig-state");
  return absl::StrCat(control_env.substr(0, slash + 1), "mig-state");
}

MigStateStamp StampMigState(const std::string& path) {
  MigStateStamp stamp;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return stamp;
  stamp.exists = true;
  stamp.dev = st.st_dev;
  stamp.ino = st.st_ino;
  stamp.size = static_cast<unsigned long long>(st.st_size);
  stamp.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000 +
                   st.st_mtim.tv_nsec;
  return stamp;
}

absl::Status ReadMigState(const std::string& path, Machine* machine) {
  std::string text;
  bool exists = false;
  if (absl::Status s = ReadSharedFile("MIG state", path, kMaxMigStateFileBytes,
                                      &text, &exists);
      !s.ok()) {
    return s;
  }
  if (!exists) return absl::OkStatus();
  Machine copy = *machine;
  if (absl::Status s = Parse(path, text, &copy); !s.ok()) return s;
  *machine = std::move(copy);
  return absl::OkStatus();
}

absl::StatusOr<nvmlReturn_t> UpdateMigState(
    const std::string& path, Machine* machine,
    absl::FunctionRef<nvmlReturn_t(Machine&)> op) {
  nvmlReturn_t result = NVML_SUCCESS;
  absl::Status status =
      WithSharedFileLock("MIG state", path, [&]() -> absl::Status {
        if (absl::Status s = ReadMigState(path, machine); !s.ok()) return s;
        Machine changed = *machine;
        result = op(changed);
        if (result != NVML_SUCCESS) return absl::OkStatus();
        if (absl::Status s =
                WriteSharedFile("MIG state", path, Format(changed));
            !s.ok()) {
          return s;
        }
        *machine = std::move(changed);
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return result;
}

}  // namespace gdp::fake_nvml
