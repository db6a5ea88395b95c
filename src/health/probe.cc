#include "health/probe.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

ProbeOutcome Failed(const absl::Status& s) { return OutcomeOf(s); }

}  // namespace

ProbeOutcome OutcomeOf(const absl::Status& s) {
  if (s.ok()) return {};
  const nvmlReturn_t code = NvmlCode(s);
  return {
      code == NVML_ERROR_GPU_IS_LOST ? ProbeResult::kLost : ProbeResult::kFail,
      std::string(s.message()), IsNvmlHang(s), IsNvmlHangOfAll(s)};
}

ProbeOutcome Probe(const Nvml& nvml, const ProbeTarget& target) {
  absl::StatusOr<nvmlDevice_t> gpu = nvml.DeviceByUuid(target.gpu.uuid);
  if (!gpu.ok()) {
    if (NvmlCode(gpu.status()) == NVML_ERROR_NOT_FOUND) {
      return {ProbeResult::kLost,
              absl::StrCat("NVML no longer finds ", target.gpu.uuid, ": ",
                           gpu.status().message())};
    }
    return Failed(gpu.status());
  }
  if (absl::Status s = nvml.MemoryTotal(*gpu).status(); !s.ok()) {
    return Failed(s);
  }
  if (target.gi == kNvmlAllInstances && target.ci == kNvmlAllInstances) {
    return {};
  }
  absl::StatusOr<unsigned> count = nvml.MaxMigDeviceCount(*gpu);
  if (!count.ok()) {
    // NOT_SUPPORTED: no MIG on this GPU any more, so no such instance.
    if (NvmlCode(count.status()) == NVML_ERROR_NOT_SUPPORTED) {
      return {ProbeResult::kGone, std::string(count.status().message())};
    }
    return Failed(count.status());
  }
  int found = 0;
  absl::Status unidentified;
  for (unsigned j = 0; j < *count; ++j) {
    absl::StatusOr<nvmlDevice_t> mig = nvml.MigDeviceByIndex(*gpu, j);
    if (!mig.ok()) {
      const nvmlReturn_t code = NvmlCode(mig.status());
      if (code == NVML_ERROR_NOT_FOUND) continue;   // a gap in the indexes
      if (code == NVML_ERROR_NOT_SUPPORTED) break;  // MIG turned off
      return Failed(mig.status());
    }
    absl::StatusOr<unsigned> gi = nvml.GpuInstanceId(*mig);
    absl::StatusOr<unsigned> ci = nvml.ComputeInstanceId(*mig);
    if (!gi.ok() || !ci.ok()) {
      // Not known to be in the instance: it fails the probe only if no
      // device of the instance answers (it may be the one we look for).
      unidentified = !gi.ok() ? gi.status() : ci.status();
      if (NvmlCode(unidentified) == NVML_ERROR_GPU_IS_LOST) {
        return Failed(unidentified);
      }
      continue;
    }
    if ((target.gi != kNvmlAllInstances && *gi != target.gi) ||
        (target.ci != kNvmlAllInstances && *ci != target.ci)) {
      continue;
    }
    ++found;
    if (absl::Status s = nvml.MemoryTotal(*mig).status(); !s.ok()) {
      return Failed(s);
    }
  }
  if (found == 0) {
    if (!unidentified.ok()) return Failed(unidentified);
    return {ProbeResult::kGone, "no MIG device in that instance"};
  }
  return {};
}

std::vector<ProbeOutcome> ProbeMigDevices(
    const Nvml& nvml, const GpuRef& gpu,
    const std::vector<MigInstance>& instances) {
  std::vector<ProbeOutcome> out(
      instances.size(),
      {ProbeResult::kGone, "no MIG device with these instance IDs"});
  auto all = [&](const ProbeOutcome& o) {
    std::fill(out.begin(), out.end(), o);
    return out;
  };
  if (instances.empty()) return out;
  absl::StatusOr<nvmlDevice_t> handle = nvml.DeviceByUuid(gpu.uuid);
  if (!handle.ok()) {
    if (NvmlCode(handle.status()) == NVML_ERROR_NOT_FOUND) {
      return all(
          {ProbeResult::kLost, absl::StrCat("NVML no longer finds ", gpu.uuid,
                                            ": ", handle.status().message())});
    }
    return all(Failed(handle.status()));
  }
  absl::StatusOr<unsigned> count = nvml.MaxMigDeviceCount(*handle);
  if (!count.ok()) {
    if (NvmlCode(count.status()) == NVML_ERROR_NOT_SUPPORTED) {
      return all({ProbeResult::kGone, std::string(count.status().message())});
    }
    return all(Failed(count.status()));
  }
  std::vector<bool> found(instances.size(), false);
  absl::Status unidentified;
  for (unsigned j = 0; j < *count; ++j) {
    absl::StatusOr<nvmlDevice_t> mig = nvml.MigDeviceByIndex(*handle, j);
    absl::StatusOr<unsigned> gi = mig.ok()
                                      ? nvml.GpuInstanceId(*mig)
                                      : absl::StatusOr<unsigned>(mig.status());
    absl::StatusOr<unsigned> ci =
        gi.ok() ? nvml.ComputeInstanceId(*mig) : gi.status();
    if (!ci.ok()) {
      const nvmlReturn_t code = NvmlCode(ci.status());
      if (code == NVML_ERROR_NOT_FOUND) continue;   // a gap in the indexes
      if (code == NVML_ERROR_NOT_SUPPORTED) break;  // MIG turned off
      if (code == NVML_ERROR_GPU_IS_LOST) return all(Failed(ci.status()));
      unidentified = ci.status();
      continue;
    }
    const auto it =
        std::find(instances.begin(), instances.end(), MigInstance{*gi, *ci});
    if (it == instances.end()) continue;
    const size_t k = static_cast<size_t>(it - instances.begin());
    found[k] = true;
    const absl::Status memory = nvml.MemoryTotal(*mig).status();
    out[k] = memory.ok() ? ProbeOutcome{} : Failed(memory);
  }
  for (size_t k = 0; k < instances.size(); ++k) {
    if (!found[k] && !unidentified.ok()) out[k] = Failed(unidentified);
  }
  return out;
}

}  // namespace gdp
