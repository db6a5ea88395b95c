// The single lock of the fake library. It guards the current Session (see
// lifecycle.h) and everything reachable from it, including event sets, so
// a waiter can sleep on an event set's condition variable with it, and a
// call blocked by a hang fault waits on it with Await (api_call.h).
#ifndef GDP_FAKE_NVML_STATE_MUTEX_H_
#define GDP_FAKE_NVML_STATE_MUTEX_H_

#include "absl/base/attributes.h"
#include "absl/synchronization/mutex.h"

namespace gdp::fake_nvml {

ABSL_CONST_INIT extern absl::Mutex state_mutex;

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_STATE_MUTEX_H_
