// Exported NVML entry points: per-cgroup GPU memory limits (R615). The
// limits live in a file shared by every process (memory_limits.h).
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "fake_nvml/api_call.h"
#include "fake_nvml/memory_limits.h"
#include "fake_nvml/nvml_exports.h"
#include "fake_nvml/report.h"

namespace fn = gdp::fake_nvml;

namespace {

// NVML's code for an error of memory_limits.h; anything but a bad argument,
// a missing cgroup or a full file is the fake's own trouble: reported on
// stderr, UNKNOWN.
nvmlReturn_t CodeOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return NVML_ERROR_INVALID_ARGUMENT;
    case absl::StatusCode::kNotFound:
      return NVML_ERROR_NOT_FOUND;
    case absl::StatusCode::kResourceExhausted:
      fn::Report(status.message());
      return NVML_ERROR_INSUFFICIENT_RESOURCES;
    default:
      fn::Report(status.message());
      return NVML_ERROR_UNKNOWN;
  }
}

// The checks both entry points share, in order: the call (handle, MIG
// device handle, lost GPU, faults), the driver's version, a GPU with MIG
// enabled (its memory belongs to its MIG devices), a null struct. On
// SUCCESS the caller goes on.
nvmlReturn_t Prologue(const fn::ApiCall& call, const void* limits) {
  if (call.status() != NVML_SUCCESS) return call.status();
  if (!fn::HasMemoryLimits(call.session().machine().driver_version)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  if (call.gpu().mig_current == NVML_DEVICE_MIG_ENABLE) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  if (limits == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceSetMemoryLimits_v1(nvmlDevice_t device,
                                          nvmlSetMemoryLimits_v1_t* limits) {
  fn::ApiCall call(device);
  if (nvmlReturn_t r = Prologue(call, limits); r != NVML_SUCCESS) return r;
  if (call.session().euid() != 0) return NVML_ERROR_NO_PERMISSION;
  absl::StatusOr<fn::CgroupDir> cgroup = fn::ResolveCgroup(limits->nameSpace);
  if (!cgroup.ok()) return CodeOf(cgroup.status());
  if (absl::Status s = fn::CheckMemoryLimits(
          limits->softLimit, limits->hardLimit, call.gpu().memory_total_bytes);
      !s.ok()) {
    return CodeOf(s);
  }
  const std::optional<std::string>& path = call.session().memory_limits_path();
  if (!path.has_value()) {
    fn::Report(
        "memory limits need FAKE_NVML_MEMORY_LIMITS or FAKE_NVML_CONTROL "
        "(a place shared by every process) at init");
    return NVML_ERROR_UNKNOWN;
  }
  fn::MemoryLimitEntry entry;
  entry.uuid = call.gpu().uuid;
  entry.gpu = call.index();
  entry.cgroup = *std::move(cgroup);
  entry.soft = limits->softLimit;
  entry.hard = limits->hardLimit;
  if (absl::Status s = fn::UpdateMemoryLimits(*path, entry); !s.ok()) {
    return CodeOf(s);
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryLimits_v1(nvmlDevice_t device,
                                          nvmlGetMemoryLimits_v1_t* limits) {
  fn::ApiCall call(device);
  if (nvmlReturn_t r = Prologue(call, limits); r != NVML_SUCCESS) return r;
  absl::StatusOr<fn::CgroupDir> cgroup = fn::ResolveCgroup(limits->nameSpace);
  if (!cgroup.ok()) return CodeOf(cgroup.status());
  fn::MemoryLimitEntry found;
  if (const std::optional<std::string>& path =
          call.session().memory_limits_path();
      path.has_value()) {
    absl::StatusOr<fn::MemoryLimitEntry> entry =
        fn::LookupMemoryLimits(*path, call.gpu().uuid, *cgroup);
    if (!entry.ok()) return CodeOf(entry.status());
    found = *std::move(entry);
  }
  limits->softLimit = found.soft;
  limits->hardLimit = found.hard;
  limits->currentUsed = 0;  // the fake runs no processes on its GPUs
  return NVML_SUCCESS;
}

}  // extern "C"
