// gdp-cdi-hook's commands: apply-memory-limits (the OCI createRuntime hook
// that sets a container's GPU memory limits through NVML) and install
// (copies the hook's bundle onto the host). The contract with the CDI spec
// is cdi/memory_limit.h's; the command line is hook/limits.h's.
#ifndef GDP_HOOK_APPLY_H_
#define GDP_HOOK_APPLY_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gdp::hook {

// The most read of the OCI state and of the bundle's config.json.
inline constexpr size_t kMaxStateBytes = 64 << 10;
inline constexpr size_t kMaxConfigBytes = 16 << 20;

struct ApplyOptions {
  std::string proc_root = "/proc";
  int state_fd = 0;  // where the OCI state is read without --container-spec
};

// Runs `args` (args[0] the program, args[1] apply-memory-limits or
// apply-cuda-memory-limits): reads the OCI state (bounded), the bundle's
// config.json (bounded), plans the limits (PlanLimits) and, when a limit is
// asked and no earlier entry applies it, finds the container's cgroup
// (ContainerCgroupDir), opens NVML under --driver-root (Nvml::Open) and sets
// each GPU's hard limit (soft 0) on that cgroup.
// Returns OK when nothing was asked or everything was applied.
// Result on failure (one line; "container <id>: " first once the state is
// read): InvalidArgument for bad arguments, state, config or env;
// NotFound/FailedPrecondition for no cgroup v2, the cgroup not found, the
// root cgroup, or no NVML; FailedPrecondition when NVML lacks the
// memory-limit entry points (driver older than R615) or a GPU is a MIG
// device; NVML's error for a GPU, naming the GPU and the cgroup.
absl::Status ApplyMemoryLimits(const std::vector<std::string>& args,
                               const ApplyOptions& options = {});

// Reads at most max_bytes from `fd` until end of file.
// Result on failure: ResourceExhausted when there is more; the errno's
// status for a read error.
absl::StatusOr<std::string> ReadFdBounded(int fd, size_t max_bytes);

// Copies the regular files of <from>/bin and <from>/lib into <to>/bin and
// <to>/lib (made if missing), each written beside its target and renamed
// over it (a hook running meanwhile keeps its old file), keeping the mode.
// At most 256 files of 256 MiB each.
// Result on failure: the errno's status naming the file; FailedPrecondition
// when <from>/bin holds no file.
absl::Status InstallBundle(const std::string& from, const std::string& to);

}  // namespace gdp::hook

#endif  // GDP_HOOK_APPLY_H_
