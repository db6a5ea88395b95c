// The shared prologue of every exported NVML call except init, shutdown and
// nvmlErrorString: hold the library lock for the call, then check that the
// library is initialized, that no "fail" fault is active and, for device
// calls, that the handle is one of this session's and its GPU is not lost.
//
//   ApiCall call(device);
//   if (call.status() != NVML_SUCCESS) return call.status();
//   ... use call.gpu() ...
#ifndef GDP_FAKE_NVML_API_CALL_H_
#define GDP_FAKE_NVML_API_CALL_H_

#include <string>

#include "fake_nvml/machine.h"
#include "fake_nvml/session.h"
#include "fake_nvml/state_mutex.h"
#include "nvml/nvml_api.h"

namespace gdp::fake_nvml {

class ABSL_SCOPED_LOCKABLE ApiCall {
 public:
  // A call not about one device. status(): UNINITIALIZED, the injected
  // code of an active "fail" fault, or SUCCESS.
  ApiCall() ABSL_EXCLUSIVE_LOCK_FUNCTION(state_mutex);

  // A call about `device`. status() as above, then INVALID_ARGUMENT if
  // `device` is not a handle of the current session, GPU_IS_LOST if its GPU
  // is lost.
  explicit ApiCall(nvmlDevice_t device)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(state_mutex);

  ~ApiCall() ABSL_UNLOCK_FUNCTION();

  ApiCall(const ApiCall&) = delete;
  ApiCall& operator=(const ApiCall&) = delete;

  nvmlReturn_t status() const { return status_; }

  // The current session; only when status() is SUCCESS.
  Session& session() const { return *session_; }

  // The GPU of a device call; only when status() is SUCCESS.
  unsigned index() const { return index_; }
  const Gpu& gpu() const { return session_->machine().gpus[index_]; }

  // Checks a further device argument with the rules of the device
  // constructor; on SUCCESS stores its GPU index in *index.
  nvmlReturn_t Resolve(nvmlDevice_t device, unsigned* index) const;

  // Re-evaluates status() (initialized, no "fail" fault) after state_mutex
  // was released and reacquired, e.g. by a wait, and returns it.
  nvmlReturn_t Refresh() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

 private:
  Session* session_ = nullptr;
  nvmlReturn_t status_ = NVML_SUCCESS;
  unsigned index_ = 0;
};

// Copies `value` and its NUL into `buffer` of `length` bytes: INVALID_ARGUMENT
// for a null buffer, INSUFFICIENT_SIZE (nothing written) when it does not
// fit.
nvmlReturn_t CopyString(const std::string& value, char* buffer,
                        unsigned length);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_API_CALL_H_
