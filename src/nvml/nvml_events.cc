// Nvml: event sets (health events: XIDs, ECC errors).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "nvml/nvml.h"
#include "nvml/nvml_internal.h"

namespace gdp {

absl::StatusOr<std::unique_ptr<NvmlEventSet>> Nvml::CreateEventSet() const {
  if (fns_->nvmlEventSetWait_v2 == nullptr &&
      fns_->nvmlEventSetWait == nullptr) {
    absl::Status s(absl::StatusCode::kUnimplemented,
                   absl::StrCat("nvmlEventSetWait_v2 and nvmlEventSetWait: "
                                "neither is in ",
                                library_path_));
    s.SetPayload(kNvmlPayloadUrl, absl::Cord(absl::StrCat(static_cast<int>(
                                      NVML_ERROR_FUNCTION_NOT_FOUND))));
    return s;
  }
  nvmlEventSet_t set = nullptr;
  absl::Status s = Guarded("nvmlEventSetCreate", nullptr, nullptr,
                           [&] { return fns_->nvmlEventSetCreate(&set); });
  if (!s.ok()) return s;
  return std::unique_ptr<NvmlEventSet>(new NvmlEventSet(*this, set));
}

NvmlEventSet::~NvmlEventSet() {
  // Not freed while NVML hangs for it: leaked rather than blocking.
  (void)nvml_.Guarded("nvmlEventSetFree", nullptr, nullptr,
                      [&] { return nvml_.fns_->nvmlEventSetFree(set_); });
}

absl::Status NvmlEventSet::Register(nvmlDevice_t device,
                                    unsigned long long types) {
  return nvml_.Guarded("nvmlDeviceRegisterEvents", device, nullptr, [&] {
    return nvml_.fns_->nvmlDeviceRegisterEvents(device, types, set_);
  });
}

absl::StatusOr<NvmlEvent> NvmlEventSet::Wait(absl::Duration timeout) {
  const int64_t ms = std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 0,
                                         std::numeric_limits<unsigned>::max());
  nvmlEventData_t data{};
  data.gpuInstanceId = kNvmlAllInstances;
  data.computeInstanceId = kNvmlAllInstances;
  const NvmlSymbols& fns = *nvml_.fns_;
  // The call's deadline counts from the end of its own timeout.
  const absl::Duration extra = absl::Milliseconds(ms);
  absl::Status s = fns.nvmlEventSetWait_v2 != nullptr
                       ? nvml_.Guarded(
                             "nvmlEventSetWait_v2", nullptr, nullptr,
                             [&] {
                               return fns.nvmlEventSetWait_v2(
                                   set_, &data, static_cast<unsigned>(ms));
                             },
                             extra)
                       : nvml_.Guarded(
                             "nvmlEventSetWait", nullptr, nullptr,
                             [&] {
                               return fns.nvmlEventSetWait(
                                   set_, &data, static_cast<unsigned>(ms));
                             },
                             extra);
  if (!s.ok()) return s;
  return NvmlEvent{data.device, data.eventType, data.eventData,
                   data.gpuInstanceId, data.computeInstanceId};
}

}  // namespace gdp
