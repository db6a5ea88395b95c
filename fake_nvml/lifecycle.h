// Init reference counting and the per-init Session. The first successful
// init loads the machine file named by $FAKE_NVML_MACHINE, takes the place
// of the memory limits ($FAKE_NVML_MEMORY_LIMITS, else beside
// $FAKE_NVML_CONTROL) and the caller's effective UID ($FAKE_NVML_EUID, else
// geteuid()) and, when $FAKE_NVML_CONTROL is set, starts the control-file
// watcher; the last shutdown stops the watcher and discards the Session.
#ifndef GDP_FAKE_NVML_LIFECYCLE_H_
#define GDP_FAKE_NVML_LIFECYCLE_H_

#include "fake_nvml/session.h"
#include "fake_nvml/state_mutex.h"
#include "nvml/nvml_api.h"

namespace gdp::fake_nvml {

// The Session of the current init generation; null while uninitialized.
Session* CurrentSession() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mutex);

// The common body of nvmlInit, nvmlInit_v2 and nvmlInitWithFlags. Returns:
//   SUCCESS, incrementing the reference count;
//   the injected code while a "fail" fault is active (count unchanged);
//   DRIVER_NOT_LOADED when $FAKE_NVML_MACHINE is unset or names no
//     readable file, UNKNOWN when the file is malformed, $FAKE_NVML_EUID
//     is not a number or the control file's directory cannot be watched
//     (each with one stderr line);
//   GPU_NOT_FOUND when the machine has no GPUs and `flags` lacks
//     NVML_INIT_FLAG_NO_GPUS.
nvmlReturn_t Initialize(unsigned flags) ABSL_LOCKS_EXCLUDED(state_mutex);

// nvmlShutdown: UNINITIALIZED when the count is already 0, else SUCCESS
// after decrementing it (tearing everything down at 0).
nvmlReturn_t Shutdown() ABSL_LOCKS_EXCLUDED(state_mutex);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_LIFECYCLE_H_
