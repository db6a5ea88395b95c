// Health signals beyond "the GPU answers", read by the monitor's sweeps
// (docs/health.md): row remapping, retired pages pending, the PCIe link,
// clock throttle reasons and the NVLinks' states.
#ifndef GDP_HEALTH_SIGNALS_H_
#define GDP_HEALTH_SIGNALS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nvml/nvml.h"

namespace gdp {

// What one read of a GPU's signals found. A signal the GPU or the driver
// does not have (NVML_ERROR_NOT_SUPPORTED, or the entry point missing) is
// nullopt; so is one whose read failed (its error is in `errors`).
struct GpuSignals {
  std::optional<NvmlRemappedRows> remapped_rows;  // Ampere and later
  std::optional<bool> retired_pages_pending;      // before Ampere
  std::optional<NvmlPcieLink> pcie;
  std::optional<unsigned long long> throttle_reasons;
  // Whether each NVLink is active, by link index; empty without NVLink.
  // A read that fails ends the list (the links from it on are unknown).
  std::vector<bool> nvlinks;
  // The reads that failed otherwise (not a hang), as "<message>" naming
  // the NVML function.
  std::vector<std::string> errors;
  // A read that hung, or was refused because of a hang (IsNvmlHang); OK
  // otherwise. The reads after it are not made.
  absl::Status hang;
};

// Reads every signal of GPU `gpu` (a GPU handle, not a MIG device's).
// Never fails as a whole: see GpuSignals.
GpuSignals ReadSignals(const Nvml& nvml, nvmlDevice_t gpu);

// The throttle reasons that count as a slowdown (metrics and the
// nvidia.com/gpu.throttled label): hardware slowdown, hardware thermal
// slowdown, hardware power brake slowdown and software thermal slowdown.
inline constexpr unsigned long long kSlowdownReasons =
    nvmlClocksThrottleReasonHwSlowdown |
    nvmlClocksThrottleReasonHwThermalSlowdown |
    nvmlClocksThrottleReasonHwPowerBrakeSlowdown |
    nvmlClocksThrottleReasonSwThermalSlowdown;

// One slowdown reason bit and how metrics name it.
struct SlowdownReason {
  unsigned long long bit;
  const char* name;  // "hw_slowdown", "hw_thermal", "hw_power_brake",
                     // "sw_thermal"
};
inline constexpr SlowdownReason kSlowdownReasonNames[] = {
    {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown"},
    {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal"},
    {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake"},
    {nvmlClocksThrottleReasonSwThermalSlowdown, "sw_thermal"},
};

// Whether two reads found the same as far as the monitor acts on them:
// every field, the throttle reasons only in their kSlowdownReasons bits.
bool SameSignals(const GpuSignals& a, const GpuSignals& b);

// Whether the link trains below its maximum generation or width.
inline bool PcieDegraded(const NvmlPcieLink& link) {
  return link.gen < link.max_gen || link.width < link.max_width;
}

}  // namespace gdp

#endif  // GDP_HEALTH_SIGNALS_H_
