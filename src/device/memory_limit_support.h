// Whether this node can enforce per-cgroup GPU memory limits (NVML's
// nvmlDeviceSetMemoryLimits_v1, driver R615 / CUDA 13.4 and later), per GPU,
// and if not, why. Pure but for ReadCgroup2Mount; thread-safe.
//
// The driver enforces a limit set on a cgroup v2 directory, for whole GPUs
// only (MIG handles are refused). So a GPU can be limited when the driver's
// library has the calls, the driver is R615 or newer, a cgroup v2 hierarchy
// is mounted, and the GPU is not in MIG mode.
#ifndef GDP_DEVICE_MEMORY_LIMIT_SUPPORT_H_
#define GDP_DEVICE_MEMORY_LIMIT_SUPPORT_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "device/gpu.h"

namespace gdp {

// The first driver branch with per-cgroup memory limits.
inline constexpr int kMemoryLimitsDriverMajor = 615;

// What the node-wide answer is made of, as discovered.
struct MemoryLimitNode {
  // Nvml::HasMemoryLimits(): the library has both entry points.
  bool nvml_has_limits = false;
  // NodeGpus::driver_version: "615.10", "580.95.05".
  std::string driver_version;
  // Where a cgroup v2 hierarchy is mounted (FindCgroup2Mount); nullopt:
  // none.
  std::optional<std::string> cgroup2_mount;
  bool operator==(const MemoryLimitNode&) const = default;
};

// The answer for a node or one GPU.
struct MemoryLimitSupport {
  bool enforced = false;
  // When not enforced: why, e.g. "driver 580.95.05 is older than R615".
  std::string reason;
  bool operator==(const MemoryLimitSupport&) const = default;
};

// The mount point of a cgroup v2 hierarchy (file system type "cgroup2") in
// `mountinfo` (the text of /proc/<pid>/mountinfo): /sys/fs/cgroup when a
// cgroup2 is mounted there (the unified layout), else the first one listed
// (on a hybrid host, /sys/fs/cgroup/unified, which counts: the driver
// limits a cgroup v2 directory, and the runtime's containers have one there
// too). Mount points are unescaped (\040 is a space). nullopt if there is
// none; malformed lines are skipped.
std::optional<std::string> FindCgroup2Mount(absl::string_view mountinfo);

// FindCgroup2Mount of `<proc_root>/self/mountinfo` (at most 4 MiB).
// Result on failure: the read's error, naming the file.
absl::StatusOr<std::optional<std::string>> ReadCgroup2Mount(
    const std::string& proc_root);

// The node-wide answer: enforced when the library has the calls, the
// driver's major version is at least 615 and a cgroup v2 is mounted; else
// the first of those that fails, as the reason ("NVML has no memory-limit
// calls (driver 580.95.05, R615 needed)", "driver 600.1 is older than
// R615", "no cgroup v2 hierarchy is mounted (the driver limits cgroup v2
// directories)").
MemoryLimitSupport NodeMemoryLimitSupport(const MemoryLimitNode& node);

// For one GPU: the node's answer, unless the GPU is in MIG mode ("GPU 0 is
// in MIG mode: the driver limits the memory of whole GPUs only").
MemoryLimitSupport GpuMemoryLimitSupport(const MemoryLimitSupport& node,
                                         const GpuInfo& gpu);

}  // namespace gdp

#endif  // GDP_DEVICE_MEMORY_LIMIT_SUPPORT_H_
