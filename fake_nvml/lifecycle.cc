#include "fake_nvml/lifecycle.h"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "fake_nvml/control.h"
#include "fake_nvml/control_watcher.h"
#include "fake_nvml/machine_loader.h"
#include "fake_nvml/memory_limits.h"
#include "fake_nvml/mig_state.h"
#include "fake_nvml/report.h"

namespace gdp::fake_nvml {

ABSL_CONST_INIT absl::Mutex state_mutex(absl::kConstInit);

namespace {

// Serializes init and shutdown, which start and join the watcher thread and
// therefore cannot hold state_mutex throughout. Order: lifecycle_mutex, then
// state_mutex.
ABSL_CONST_INIT absl::Mutex lifecycle_mutex(absl::kConstInit);

int init_count ABSL_GUARDED_BY(state_mutex) = 0;
// Owned; raw pointers keep these globals trivially destructible.
Session* session ABSL_GUARDED_BY(state_mutex) = nullptr;
ControlWatcher* watcher ABSL_GUARDED_BY(lifecycle_mutex) = nullptr;

std::string EnvOrEmpty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// Loads the machine for a first init; on failure reports and returns the
// NVML code.
nvmlReturn_t LoadMachine(Machine* machine) {
  const std::string path = EnvOrEmpty("FAKE_NVML_MACHINE");
  if (path.empty()) {
    Report("FAKE_NVML_MACHINE is not set; it must name a machine YAML file");
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  absl::StatusOr<Machine> loaded = LoadMachineFile(path);
  if (!loaded.ok()) {
    Report(loaded.status().message());
    return absl::IsNotFound(loaded.status()) ? NVML_ERROR_DRIVER_NOT_LOADED
                                             : NVML_ERROR_UNKNOWN;
  }
  *machine = *std::move(loaded);
  return NVML_SUCCESS;
}

// Stops the watcher if the library is unloaded (or the process exits)
// while still initialized, so its thread never runs unmapped code.
__attribute__((destructor)) void StopWatcherAtUnload() {
  if (!lifecycle_mutex.TryLock()) return;
  delete watcher;
  watcher = nullptr;
  lifecycle_mutex.Unlock();
}

}  // namespace

Session* CurrentSession() { return session; }

nvmlReturn_t Initialize(unsigned flags) {
  absl::MutexLock lifecycle(&lifecycle_mutex);
  {
    absl::MutexLock lock(&state_mutex);
    if (init_count > 0) {
      if (session->failure().has_value()) return *session->failure();
      ++init_count;
      return NVML_SUCCESS;
    }
  }
  Machine machine;
  if (nvmlReturn_t result = LoadMachine(&machine); result != NVML_SUCCESS) {
    return result;
  }
  if (machine.gpus.empty() && (flags & NVML_INIT_FLAG_NO_GPUS) == 0) {
    return NVML_ERROR_GPU_NOT_FOUND;
  }
  unsigned euid = geteuid();
  if (const std::string e = EnvOrEmpty("FAKE_NVML_EUID");
      !e.empty() && !absl::SimpleAtoi(e, &euid)) {
    Report(absl::StrCat("FAKE_NVML_EUID '", e, "' is not a user ID"));
    return NVML_ERROR_UNKNOWN;
  }
  const std::string control = EnvOrEmpty("FAKE_NVML_CONTROL");
  {
    absl::MutexLock lock(&state_mutex);
    session = new Session(std::move(machine));
    session->set_memory_limits_path(
        MemoryLimitsPath(EnvOrEmpty("FAKE_NVML_MEMORY_LIMITS"), control));
    session->set_mig_state_path(
        MigStatePath(EnvOrEmpty("FAKE_NVML_MIG_STATE"), control));
    session->set_euid(euid);
    init_count = 1;
  }
  if (control.empty()) return NVML_SUCCESS;
  absl::StatusOr<std::unique_ptr<ControlWatcher>> started =
      ControlWatcher::Start(control, &ApplyControlLine, &ReplayControlLine);
  if (!started.ok()) {
    Report(started.status().message());
    absl::MutexLock lock(&state_mutex);
    delete session;
    session = nullptr;
    init_count = 0;
    return NVML_ERROR_UNKNOWN;
  }
  watcher = started->release();
  return NVML_SUCCESS;
}

nvmlReturn_t Shutdown() {
  absl::MutexLock lifecycle(&lifecycle_mutex);
  {
    absl::MutexLock lock(&state_mutex);
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (--init_count > 0) return NVML_SUCCESS;
    delete session;
    session = nullptr;
  }
  // Outside state_mutex: the watcher thread may be waiting for it, and
  // ignores commands once the session is gone.
  delete watcher;
  watcher = nullptr;
  return NVML_SUCCESS;
}

}  // namespace gdp::fake_nvml
