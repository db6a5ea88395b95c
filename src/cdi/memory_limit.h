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
//  - `--share key,uuid,MiB`: share `key` limits GPU `uuid` to MiB. DRA
//    makes one CDI device per share, the device plugin one per replica of
//    a GPU with a memoryPerReplica (ReplicaShareKey), each with one such
//    hook entry. The hook reads every gdp-cdi-hook entry of the
//    container's config.json, so the shares of one GPU in one container
//    add up (a key given twice counts once), and shares of different GPUs
//    keep their own limits. The limit is in the CDI spec, which the pod
//    cannot change.
//  - `--gpu-id uuid` (NVIDIA's convention, which our hook accepts as a
//    drop-in): GPU `uuid` takes its limit from the container's env,
//    NVIDIA_GPU_MEMORY_LIMIT=<MiB> (one value for every GPU of the hook
//    entry, as nvidia-cdi-hook). The pod's own env comes after the
//    device plugin's and wins, so a pod can raise such a limit: we emit
//    it only for Kind::kNvidia.
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
// NVIDIA's hook's subcommand (nvidia-container-toolkit, cmd/nvidia-cdi-hook),
// after args[0] as NvidiaHookCommand gives it ("nvidia-cdi-hook", or
// "nvidia-ctk", "hook"); our hook accepts this subcommand too.
inline constexpr char kNvidiaHookCommand[] = "apply-cuda-memory-limits";
// NVIDIA's env contract, whole MiB.
inline constexpr char kNvidiaLimitEnv[] = "NVIDIA_GPU_MEMORY_LIMIT";
inline constexpr char kNvidiaRequestEnv[] = "NVIDIA_GPU_MEMORY_REQUEST";
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

// The share key of device-plugin replica `replica` of GPU `gpu_uuid`:
// "<gpu_uuid>.replica-<replica>" (e.g. "GPU-8d3f...-4e1c.replica-3").
// Distinct per replica on the node, and from DRA's keys (claim UIDs).
std::string ReplicaShareKey(const std::string& gpu_uuid, int replica);

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

// NVIDIA's hook entry for a device-plugin GPU device (shared by every
// container given that GPU), reading the limit from the container's env:
// `nvidia-cdi-hook apply-cuda-memory-limits --driver-root <root> --gpu-id
// <gpu_uuid>` (NVIDIA's convention). A container given the GPU without a
// limit in its env runs the hook, which does nothing.
// Result on failure: InvalidArgument as AddShareLimit (UUID, path, root),
// or for a hook of Kind::kOurs (whose device-plugin limits are shares:
// AddShareLimit with ReplicaShareKey); *device is then unchanged.
absl::Status AddEnvLimitHook(const MemoryLimitHook& hook,
                             const std::string& gpu_uuid, CdiDevice* device);

// The env entries ("K=V") an Allocate response carries for NVIDIA's hook
// (bytes by GPU UUID; the GPUs' devices carry AddEnvLimitHook):
// NVIDIA_GPU_MEMORY_LIMIT=<MiB> and NVIDIA_GPU_MEMORY_REQUEST=0. An empty
// map: no entries. The pod can override them (its env comes later).
// Result on failure: InvalidArgument for a limit that is 0 or not whole
// MiB, an invalid UUID, or GPUs with different limits (NVIDIA's contract
// has one limit for all of a container's GPUs).
absl::StatusOr<std::vector<std::string>> NvidiaAllocateLimitEnv(
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
