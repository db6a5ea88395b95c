// `gpu-device-plugin nvml-report`: what the driver answers, read only.
// For an operator meeting a new driver, and for scripts/gpu-check.sh on a
// real GPU: every NVML read the daemon relies on (identity, health
// signals, event registration, MIG profiles and their placements, the
// memory-limit calls), each with its value or NVML's code and how long it
// took. Nothing is changed: no MIG mode, limit, clock or event set is left
// behind (the event set made to try registration is freed).
#ifndef GDP_CMD_NVML_REPORT_H_
#define GDP_CMD_NVML_REPORT_H_

#include <iosfwd>
#include <string>

#include "nlohmann/json.hpp"
#include "nvml/nvml.h"

namespace gdp {

// The report of every GPU `nvml` lists, as JSON: {"library", "driver_version",
// "cuda_driver_version", "entry_points": {"mig", "mig_making",
// "memory_limits"}, "gpus": [...]}. Each read is an object {"ok": true,
// "value": ..., "us": N} or {"ok": false, "code": <nvmlReturn_t>, "error":
// message, "us": N}. `cgroup_dir` is the cgroup whose memory limits are
// read (GetMemoryLimits only; "" skips it).
nlohmann::json NvmlReport(const Nvml& nvml, const std::string& cgroup_dir);

// Opens NVML under `driver_root`, prints NvmlReport (indented) to `out`.
// Returns 0, or 1 after printing why NVML could not be opened to `err`.
int RunNvmlReport(const std::string& driver_root, const std::string& cgroup_dir,
                  std::ostream& out, std::ostream& err);

}  // namespace gdp

#endif  // GDP_CMD_NVML_REPORT_H_
