// Cheap NVML questions that tell whether a GPU, or a MIG instance of it,
// still answers.
#ifndef GDP_HEALTH_PROBE_H_
#define GDP_HEALTH_PROBE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "health/tracker.h"
#include "nvml/nvml.h"

namespace gdp {

struct ProbeOutcome {
  ProbeResult result = ProbeResult::kPass;
  std::string detail;  // the NVML error, for anything but kPass
  // kFail because an NVML call hung (nvml/deadline.h): about this GPU, or
  // (hung_all) about NVML as a whole.
  bool hung = false;
  bool hung_all = false;
};

// A probe's outcome for an NVML call's status: kPass for OK, kLost for
// NVML_ERROR_GPU_IS_LOST, else kFail (hung / hung_all for a hang).
ProbeOutcome OutcomeOf(const absl::Status& s);

// Looks the GPU up again by UUID (a fresh handle) and reads its memory
// info; for a target naming a GPU and/or compute instance, also finds
// every MIG device of the GPU in that instance and reads its memory info.
// kLost: NVML_ERROR_GPU_IS_LOST from any call, or the UUID is not found;
// kGone: the GPU answers but has no MIG device in the instance (MIG off, or
// the instance was destroyed); kFail: any other NVML error. A MIG device
// whose instance IDs cannot be read may or may not be in the instance: it
// fails the probe only when no device of the instance answered.
ProbeOutcome Probe(const Nvml& nvml, const ProbeTarget& target);

// A MIG device by its GPU and compute instance IDs.
struct MigInstance {
  unsigned gi = 0;
  unsigned ci = 0;
  bool operator==(const MigInstance&) const = default;
};

// Probes the MIG devices of `gpu` in one pass over them (a sweep's probe):
// for each of `instances`, in the same order: kPass if the MIG device with
// those IDs reads its memory info; kFail with the error if it does not, or
// if it was not found while some MIG device's IDs could not be read (that
// one may be it: a failing MIG device fails every call through its
// handle); kGone if no MIG device has them (MIG turned off, or the layout
// changed); kLost for all when the GPU is lost or no longer found.
std::vector<ProbeOutcome> ProbeMigDevices(
    const Nvml& nvml, const GpuRef& gpu,
    const std::vector<MigInstance>& instances);

}  // namespace gdp

#endif  // GDP_HEALTH_PROBE_H_
