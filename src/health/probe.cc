#include "health/probe.h"

#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

ProbeOutcome Failed(const absl::Status& s) {
  const nvmlReturn_t code = NvmlCode(s);
  return {
      code == NVML_ERROR_GPU_IS_LOST ? ProbeResult::kLost : ProbeResult::kFail,
      std::string(s.message())};
}

}  // namespace

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

}  // namespace gdp
