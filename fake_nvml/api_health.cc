// Exported NVML entry points: health signals (row remapping, retired pages
// pending, PCIe link, clock throttle reasons), as the session holds them.
#include "fake_nvml/api_call.h"
#include "fake_nvml/machine.h"
#include "fake_nvml/nvml_exports.h"

namespace fn = gdp::fake_nvml;

namespace {

// Writes `value` to `out`; INVALID_ARGUMENT for a null `out`.
template <typename T>
nvmlReturn_t Answer(T value, T* out) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *out = value;
  return NVML_SUCCESS;
}

const fn::Session::Signals& SignalsOf(const fn::ApiCall& call) {
  return call.session().signals(call.index());
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device,
                                       unsigned int* corr_rows,
                                       unsigned int* unc_rows,
                                       unsigned int* is_pending,
                                       unsigned int* failure_occurred) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  const std::optional<fn::RemappedRows>& rows = SignalsOf(call).remapped_rows;
  if (!rows.has_value()) return NVML_ERROR_NOT_SUPPORTED;
  if (corr_rows == nullptr || unc_rows == nullptr || is_pending == nullptr ||
      failure_occurred == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *corr_rows = rows->corrected;
  *unc_rows = rows->uncorrectable;
  *is_pending = rows->pending ? 1 : 0;
  *failure_occurred = rows->failure ? 1 : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(
    nvmlDevice_t device, nvmlEnableState_t* is_pending) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (fn::RemapsRows(call.gpu().architecture)) return NVML_ERROR_NOT_SUPPORTED;
  return Answer(SignalsOf(call).retired_pages_pending ? NVML_FEATURE_ENABLED
                                                      : NVML_FEATURE_DISABLED,
                is_pending);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
                                                 unsigned int* gen) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  return Answer(SignalsOf(call).pcie.gen, gen);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
                                                unsigned int* gen) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  return Answer(SignalsOf(call).pcie.max_gen, gen);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
                                            unsigned int* width) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  return Answer(SignalsOf(call).pcie.width, width);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device,
                                           unsigned int* width) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  return Answer(SignalsOf(call).pcie.max_width, width);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(
    nvmlDevice_t device, unsigned long long* reasons) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  return Answer(SignalsOf(call).throttle_reasons, reasons);
}

}  // extern "C"
