// Exported NVML entry points: health signals (row remapping, retired pages
// pending, PCIe link, clock throttle reasons, and the field values of the
// recovery action and volatile ECC counts), as the session holds them.
#include "absl/time/clock.h"
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

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int values_count,
                                      nvmlFieldValue_t* values) {
  fn::ApiCall call(device);
  if (call.status() != NVML_SUCCESS) return call.status();
  if (values == nullptr || values_count < 0) return NVML_ERROR_INVALID_ARGUMENT;
  const fn::Session::Signals& signals = SignalsOf(call);
  const bool action =
      fn::ReportsRecoveryAction(call.session().machine().driver_version);
  const long long now = absl::ToUnixMicros(absl::Now());
  for (int i = 0; i < values_count; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.timestamp = now;
    v.latencyUsec = 0;
    v.nvmlReturn = NVML_SUCCESS;
    switch (v.fieldId) {
      case NVML_FI_DEV_ECC_SBE_VOL_TOTAL:
        v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        v.value.ullVal = signals.volatile_sbe;
        break;
      case NVML_FI_DEV_ECC_DBE_VOL_TOTAL:
        v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        v.value.ullVal = signals.volatile_dbe;
        break;
      case NVML_FI_DEV_GET_GPU_RECOVERY_ACTION:
        if (!action) {
          v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
          break;
        }
        v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        v.value.uiVal = signals.recovery_action;
        break;
      default:  // a field the fake does not model
        v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        break;
    }
  }
  return NVML_SUCCESS;
}

}  // extern "C"
