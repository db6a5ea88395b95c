#include "fake_nvml/api_call.h"

#include <cstring>
#include <optional>

#include "fake_nvml/lifecycle.h"

namespace gdp::fake_nvml {

ApiCall::ApiCall() {
  state_mutex.Lock();
  Refresh();
}

ApiCall::ApiCall(nvmlDevice_t device) {
  state_mutex.Lock();
  if (Refresh() == NVML_SUCCESS) status_ = Resolve(device, &index_);
}

ApiCall::~ApiCall() { state_mutex.Unlock(); }

nvmlReturn_t ApiCall::Refresh() {
  session_ = CurrentSession();
  if (session_ == nullptr) {
    status_ = NVML_ERROR_UNINITIALIZED;
  } else if (session_->failure().has_value()) {
    status_ = *session_->failure();
  } else {
    status_ = NVML_SUCCESS;
  }
  return status_;
}

nvmlReturn_t ApiCall::Resolve(nvmlDevice_t device, unsigned* index) const {
  const std::optional<unsigned> found = session_->IndexOf(device);
  if (!found.has_value()) return NVML_ERROR_INVALID_ARGUMENT;
  if (session_->lost(*found)) return NVML_ERROR_GPU_IS_LOST;
  *index = *found;
  return NVML_SUCCESS;
}

nvmlReturn_t CopyString(const std::string& value, char* buffer,
                        unsigned length) {
  if (buffer == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < value.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

}  // namespace gdp::fake_nvml
