#include "fake_nvml/api_call.h"

#include <cstring>
#include <optional>

#include "absl/synchronization/mutex.h"
#include "fake_nvml/lifecycle.h"

namespace gdp::fake_nvml {

ApiCall::ApiCall() {
  state_mutex.Lock();
  AwaitRelease(Subject{});
  Refresh();
}

ApiCall::ApiCall(nvmlDevice_t device, Accept accept) {
  state_mutex.Lock();
  AwaitRelease(Subject{.devices = {device, nullptr}});
  CheckDevice(device, accept);
}

ApiCall::ApiCall(nvmlDevice_t device, nvmlDevice_t other) {
  state_mutex.Lock();
  AwaitRelease(Subject{.devices = {device, other}});
  CheckDevice(device, Accept::kGpu);
}

ApiCall::ApiCall(nvmlGpuInstance_t gpu_instance) {
  state_mutex.Lock();
  AwaitRelease(Subject{.gpu_instance = gpu_instance});
  if (Refresh() != NVML_SUCCESS) return;
  const std::optional<Session::InstanceRef> gi =
      session_->GpuInstanceOf(gpu_instance);
  if (!gi.has_value()) {
    status_ = NVML_ERROR_INVALID_ARGUMENT;
  } else if (session_->lost(gi->gpu)) {
    status_ = NVML_ERROR_GPU_IS_LOST;
  } else {
    index_ = gi->gpu;
    gpu_instance_ = gi->pos;
  }
}

ApiCall::ApiCall(nvmlComputeInstance_t compute_instance) {
  state_mutex.Lock();
  AwaitRelease(Subject{.compute_instance = compute_instance});
  if (Refresh() != NVML_SUCCESS) return;
  const std::optional<Session::InstanceRef> ci =
      session_->ComputeInstanceOf(compute_instance);
  if (!ci.has_value()) {
    status_ = NVML_ERROR_INVALID_ARGUMENT;
    return;
  }
  SetMig(ci->gpu, ci->pos);
}

ApiCall::~ApiCall() { state_mutex.Unlock(); }

bool ApiCall::Released(const Subject* subject) {
  const Session* session = CurrentSession();
  // The last shutdown releases every blocked call.
  if (session == nullptr) return true;
  if (session->hang_all()) return false;
  for (nvmlDevice_t device : subject->devices) {
    const std::optional<unsigned> gpu = session->GpuOf(device);
    if (gpu.has_value() && session->hung(*gpu)) return false;
  }
  const std::optional<Session::InstanceRef> gi =
      session->GpuInstanceOf(subject->gpu_instance);
  if (gi.has_value() && session->hung(gi->gpu)) return false;
  const std::optional<Session::InstanceRef> ci =
      session->ComputeInstanceOf(subject->compute_instance);
  return !(ci.has_value() && session->hung(ci->gpu));
}

void ApiCall::AwaitRelease(const Subject& subject) {
  state_mutex.Await(absl::Condition(&ApiCall::Released, &subject));
}

void ApiCall::CheckDevice(nvmlDevice_t device, Accept accept) {
  if (Refresh() != NVML_SUCCESS) return;
  if (std::optional<Session::InstanceRef> mig = session_->MigOf(device)) {
    if (accept == Accept::kGpu) {
      status_ = NVML_ERROR_NOT_SUPPORTED;
    } else {
      SetMig(mig->gpu, mig->pos);
    }
    return;
  }
  status_ = Resolve(device, &index_);
}

nvmlReturn_t ApiCall::Refresh() {
  session_ = CurrentSession();
  if (session_ == nullptr) {
    status_ = NVML_ERROR_UNINITIALIZED;
  } else if (session_->failure().has_value()) {
    status_ = *session_->failure();
  } else {
    status_ = NVML_SUCCESS;
    session_->SyncMig();
  }
  return status_;
}

void ApiCall::SetMig(unsigned gpu, unsigned mig) {
  if (session_->lost(gpu)) {
    status_ = NVML_ERROR_GPU_IS_LOST;
    return;
  }
  if (std::optional<nvmlReturn_t> failure = session_->mig_failure(gpu, mig)) {
    status_ = *failure;
    return;
  }
  index_ = gpu;
  mig_ = mig;
  gpu_instance_ = this->gpu().mig_devices[mig].gpu_instance;
}

nvmlReturn_t ApiCall::Resolve(nvmlDevice_t device, unsigned* index) const {
  const std::optional<unsigned> found = session_->IndexOf(device);
  if (!found.has_value()) {
    return session_->MigOf(device).has_value() ? NVML_ERROR_NOT_SUPPORTED
                                               : NVML_ERROR_INVALID_ARGUMENT;
  }
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
