// Exported NVML entry points: event sets.
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "fake_nvml/api_call.h"
#include "fake_nvml/event_set.h"
#include "fake_nvml/nvml_exports.h"

namespace fn = gdp::fake_nvml;

namespace {

// The v1 nvmlEventData_t ends after eventData.
constexpr size_t kEventDataV1Bytes =
    offsetof(nvmlEventData_t, eventData) + sizeof(unsigned long long);

// Waits up to `timeout_ms` for an event on `set` and copies the first
// `bytes` bytes of it to *data.
nvmlReturn_t Wait(nvmlEventSet_t set, nvmlEventData_t* data,
                  unsigned timeout_ms, size_t bytes) {
  fn::ApiCall call;
  if (call.status() != NVML_SUCCESS) return call.status();
  const std::shared_ptr<fn::EventSet> events = call.session().FindEventSet(set);
  if (events == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const absl::Time deadline = absl::Now() + absl::Milliseconds(timeout_ms);
  while (true) {
    // Shutdown and injected faults end a wait as they would start one.
    if (nvmlReturn_t r = call.Refresh(); r != NVML_SUCCESS) return r;
    if (events->closed()) return NVML_ERROR_INVALID_ARGUMENT;
    if (std::optional<nvmlEventData_t> event = events->Pop()) {
      std::memcpy(data, &*event, bytes);
      return NVML_SUCCESS;
    }
    // Queued events first (the XID 79 of a GPU falling off the bus), then
    // a set holding a lost GPU answers that, as NVML documents.
    for (unsigned gpu : events->RecordedGpus()) {
      if (call.session().lost(gpu)) return NVML_ERROR_GPU_IS_LOST;
    }
    if (absl::Now() >= deadline) return NVML_ERROR_TIMEOUT;
    events->WaitUntil(deadline);
  }
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  fn::ApiCall call;
  if (call.status() != NVML_SUCCESS) return call.status();
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = call.session().CreateEventSet();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                      unsigned long long event_types,
                                      nvmlEventSet_t set) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  const std::shared_ptr<fn::EventSet> events = call.session().FindEventSet(set);
  if (events == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if ((event_types & ~call.gpu().supported_events) != 0) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  events->Register(call.index(), event_types);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                              unsigned long long* event_types) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (event_types == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *event_types = call.gpu().supported_events;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data,
                              unsigned int timeout_ms) {
  return Wait(set, data, timeout_ms, kEventDataV1Bytes);
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeout_ms) {
  return Wait(set, data, timeout_ms, sizeof(nvmlEventData_t));
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  fn::ApiCall call;
  if (call.status() != NVML_SUCCESS) return call.status();
  return call.session().FreeEventSet(set) ? NVML_SUCCESS
                                          : NVML_ERROR_INVALID_ARGUMENT;
}

}  // extern "C"
