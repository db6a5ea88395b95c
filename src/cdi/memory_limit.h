// CDI edits that make the container runtime apply a GPU memory limit to a
// container's own cgroup when the container is created: a hook entry
// (CDI containerEdits.hooks) naming our hook, gdp-cdi-hook, or the NVIDIA
// container toolkit's nvidia-cdi-hook apply-cuda-memory-limits, plus the
// container environment the hook reads. The hook itself is src/hook/
// (docs/sharing.md, "The memory-limit hook").
//
// The contract between these edits and the hooks (hook stage createRuntime:
// the runtime runs it on the host after it made the container's cgroup and
// put the container's first process in it, before the workload runs):
//
//  gdp-cdi-hook apply-memory-limits --driver-root <dir>
//      [--gpu-id <uuid>]... [--share <key>,<uuid>,<MiB>]...
//  (also accepted under NVIDIA's name, apply-cuda-memory-limits, with
//  NVIDIA's flags: it is a drop-in for nvidia-cdi-hook's subcommand)
//
//  - `--share key,uuid,MiB` (DRA: one CDI device per share, each with one
//    such hook entry): share `key` limits GPU `uuid` to MiB. The hook reads
//    every gdp-cdi-hook entry of the container's config.json, so the shares
//    of one GPU in one container add up, and shares of different GPUs keep
//    their own limits. The limit is in the CDI spec, which the pod cannot
//    change.
//  - `--gpu-id uuid` (the device plugin's shared GPU device, and NVIDIA's
//    convention): GPU `uuid` takes its limit from the container's env:
//    GDP_GPU_MEMORY_LIMIT_<uuid, '-' as '_'>=<MiB> (AllocateLimitEnv) when
//    set, else NVIDIA's NVIDIA_GPU_MEMORY_LIMIT=<MiB> (one value for every
//    GPU of the hook entry, as nvidia-cdi-hook).
//  - No limit asked: the hook does nothing and exits 0. A limit asked and
//    not applied (driver before R615, NVML error, MIG device, no cgroup v2,
//    cgroup not found): non-zero exit with one line on stderr, so the
//    container does not start.
//  - Hard limits only (soft 0): a dmem soft limit propagates to the
//    ancestors and is not undone when the container's cgroup goes.
//
// With Kind::kNvidia the edits use NVIDIA's contract instead:
// NVIDIA_GPU_MEMORY_LIMIT=<MiB> and NVIDIA_GPU_MEMORY_REQUEST=0 (so that
// its hook sets no soft limit) in the env, and one hook entry per GPU,
// `nvidia-cdi-hook apply-cuda-memory-limits --driver-root <dir> --gpu-id
// <uuid>`. It has one limit per container for all of its GPUs, so it
// cannot express shares of different limits, or the sum of several shares
// of one GPU, in one container.
#ifndef GDP_CDI_MEMORY_LIMIT_H_
#define GDP_CDI_MEMORY_LIMIT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cdi/spec.h"

namespace gdp::cdi {

// The OCI hook stage of every memory-limit hook entry (NVIDIA's too).
inline constexpr char kMemoryLimitHookStage[] = "createRuntime";
// Seconds the runtime gives the hook before killing it (and failing the
// container): NVML's start-up on a sick GPU may hang.
inline constexpr int kMemoryLimitHookTimeoutSeconds = 30;
// Our hook: args[0] and its subcommand.
inline constexpr char kOurHookName[] = "gdp-cdi-hook";
inline constexpr char kOurHookCommand[] = "apply-memory-limits";
// NVIDIA's hook (nvidia-container-toolkit, cmd/nvidia-cdi-hook): args[0]
// and its subcommand; our hook accepts this subcommand too.
inline constexpr char kNvidiaHookName[] = "nvidia-cdi-hook";
inline constexpr char kNvidiaHookCommand[] = "apply-cuda-memory-limits";
// NVIDIA's env contract, whole MiB.
inline constexpr char kNvidiaLimitEnv[] = "NVIDIA_GPU_MEMORY_LIMIT";
inline constexpr char kNvidiaRequestEnv[] = "NVIDIA_GPU_MEMORY_REQUEST";
// Our per-GPU env: this + the GPU's UUID with '-' as '_'.
inline constexpr char kGpuLimitEnvPrefix[] = "GDP_GPU_MEMORY_LIMIT_";
// Bytes in a MiB: limits travel as whole MiB.
inline constexpr uint64_t kMiB = uint64_t{1} << 20;

struct MemoryLimitHook {
  enum class Kind { kOurs, kNvidia };
  Kind kind = Kind::kOurs;
  std::string path;         // host path of the hook binary, absolute
  std::string driver_root;  // host driver root, absolute ("/" for the host)
};

// `limit_bytes` in whole MiB.
// Result on failure: InvalidArgument when it is 0 or not a multiple of
// 1 MiB (naming the value).
absl::StatusOr<uint64_t> LimitMiB(uint64_t limit_bytes);

// The env variable that carries GPU `gpu_uuid`'s limit for our hook:
// "GDP_GPU_MEMORY_LIMIT_GPU_8d3f..." (kGpuLimitEnvPrefix + the UUID, '-'
// as '_'). Injective for UUIDs, which have no '_'.
std::string GpuLimitEnvName(const std::string& gpu_uuid);

// Edits that make the runtime apply one DRA share's hard limit on
// `gpu_uuid` to the container (env and/or hook args), added to *device.
// share_key is unique per share on the node (claim UID + share ID):
// letters, digits, '.', '_', '-', at most 128 characters. kOurs: one hook
// entry `--share <share_key>,<gpu_uuid>,<MiB>`. kNvidia: env
// NVIDIA_GPU_MEMORY_LIMIT=<MiB>, NVIDIA_GPU_MEMORY_REQUEST=0 and NVIDIA's
// hook entry with --gpu-id <gpu_uuid> (a container holding another share
// then gets one of the shares' limits on every GPU: see
// CheckContainerShares).
// Result on failure: InvalidArgument for a limit that is 0 or not whole
// MiB, an invalid share key, GPU UUID (letters, digits, '-'; not a
// "MIG-" one: MIG devices cannot be limited), hook path or driver root
// (not absolute); *device is then unchanged.
absl::Status AddShareLimit(const MemoryLimitHook& hook,
                           const std::string& gpu_uuid, uint64_t limit_bytes,
                           const std::string& share_key, CdiDevice* device);

// The hook entry for a device-plugin GPU device (shared by every container
// given that GPU), reading the limit from the container's env:
// `--driver-root <root> --gpu-id <gpu_uuid>` for either kind (NVIDIA's
// convention). A container given the GPU without a limit in its env runs
// the hook, which does nothing.
// Result on failure: InvalidArgument as AddShareLimit (UUID, path, root);
// *device is then unchanged.
absl::Status AddEnvLimitHook(const MemoryLimitHook& hook,
                             const std::string& gpu_uuid, CdiDevice* device);

// The env entries ("K=V") an Allocate response carries for per-GPU limits
// (bytes by GPU UUID; the GPUs' devices carry AddEnvLimitHook). kOurs: one
// GpuLimitEnvName(uuid)=<MiB> per GPU. kNvidia: NVIDIA_GPU_MEMORY_LIMIT=
// <MiB> and NVIDIA_GPU_MEMORY_REQUEST=0. An empty map: no entries.
// Result on failure: InvalidArgument for a limit that is 0 or not whole
// MiB, or an invalid UUID; with kNvidia, for GPUs with different limits
// (NVIDIA's contract has one limit for all of a container's GPUs).
absl::StatusOr<std::vector<std::string>> AllocateLimitEnv(
    const MemoryLimitHook& hook,
    const std::map<std::string, uint64_t>& limit_bytes_by_uuid);

// One share's limit, for CheckContainerShares.
struct ShareLimit {
  std::string gpu_uuid;
  uint64_t limit_bytes = 0;
};

// Whether `hook` can apply `shares` when they all go to one container (for
// example the shares of one claim). kOurs: always (limits of one GPU add
// up). kNvidia: at most one share per GPU and one limit for all of them.
// Result on failure: FailedPrecondition naming what NVIDIA's contract
// cannot express; InvalidArgument for a limit that is 0 or not whole MiB.
absl::Status CheckContainerShares(const MemoryLimitHook& hook,
                                  const std::vector<ShareLimit>& shares);

}  // namespace gdp::cdi

#endif  // GDP_CDI_MEMORY_LIMIT_H_
