#include "health/signals.h"

#include <utility>

#include "nvml/deadline.h"

namespace gdp {
namespace {

// Whether `s` says the GPU or the driver has no such signal.
bool NotThere(const absl::Status& s) {
  const nvmlReturn_t code = NvmlCode(s);
  return code == NVML_ERROR_NOT_SUPPORTED ||
         code == NVML_ERROR_FUNCTION_NOT_FOUND;
}

// Stores `read`'s value in `out`, or notes its error; false after a hang
// (nothing more is read).
template <typename T>
bool Take(absl::StatusOr<T> read, std::optional<T>* out, GpuSignals* signals) {
  if (read.ok()) {
    *out = *std::move(read);
    return true;
  }
  if (IsNvmlHang(read.status())) {
    signals->hang = read.status();
    return false;
  }
  if (!NotThere(read.status())) {
    signals->errors.emplace_back(read.status().message());
  }
  return true;
}

}  // namespace

GpuSignals ReadSignals(const Nvml& nvml, nvmlDevice_t gpu) {
  GpuSignals s;
  if (!Take(nvml.RemappedRows(gpu), &s.remapped_rows, &s) ||
      !Take(nvml.RetiredPagesPending(gpu), &s.retired_pages_pending, &s) ||
      !Take(nvml.PcieLink(gpu), &s.pcie, &s) ||
      !Take(nvml.ThrottleReasons(gpu), &s.throttle_reasons, &s)) {
    return s;
  }
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    absl::StatusOr<bool> active = nvml.NvLinkActive(gpu, link);
    // NOT_SUPPORTED: no NVLink; INVALID_ARGUMENT: past the last link.
    if (NotThere(active.status()) ||
        NvmlCode(active.status()) == NVML_ERROR_INVALID_ARGUMENT) {
      break;
    }
    std::optional<bool> state;
    // A failed read ends the links read this time (the rest are unknown).
    if (!Take(std::move(active), &state, &s) || !state.has_value()) break;
    s.nvlinks.push_back(*state);
  }
  return s;
}

bool SameSignals(const GpuSignals& a, const GpuSignals& b) {
  auto slowdown = [](const std::optional<unsigned long long>& reasons) {
    return reasons.has_value()
               ? std::optional<unsigned long long>(*reasons & kSlowdownReasons)
               : std::nullopt;
  };
  return a.remapped_rows == b.remapped_rows &&
         a.retired_pages_pending == b.retired_pages_pending &&
         a.pcie == b.pcie &&
         slowdown(a.throttle_reasons) == slowdown(b.throttle_reasons) &&
         a.nvlinks == b.nvlinks && a.errors == b.errors &&
         a.hang.ok() == b.hang.ok() && a.hang.message() == b.hang.message();
}

}  // namespace gdp
