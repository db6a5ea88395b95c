// What gdp-cdi-hook is asked to do: its command line, the OCI state the
// runtime passes on stdin, and the GPU memory limits a container asks for
// (from the hook entries and the env of the container's config.json). Pure:
// no files, no NVML. The contract is cdi/memory_limit.h's.
#ifndef GDP_HOOK_LIMITS_H_
#define GDP_HOOK_LIMITS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gdp::hook {

// The most --gpu-id and --share flags one command line may carry.
inline constexpr size_t kMaxHookFlags = 1024;

struct Share {
  std::string key;       // unique per share on the node
  std::string gpu_uuid;  // the GPU it limits
  uint64_t mib = 0;      // its limit, whole MiB, > 0
  bool operator==(const Share&) const = default;
};

// `apply-memory-limits` (or NVIDIA's name, apply-cuda-memory-limits).
struct HookArgs {
  std::string driver_root;           // --driver-root; "" reads as "/"
  std::vector<std::string> gpu_ids;  // --gpu-id: limit from the env
  std::vector<Share> shares;         // --share key,uuid,MiB
  // --container-spec: a file holding the OCI state (NVIDIA's flag); empty
  // or "-": stdin.
  std::string container_spec;
};

// Parses args[1..] (args[0] is the program; args[1] the subcommand).
// Flags as "--flag value" or "--flag=value".
// Result on failure: InvalidArgument naming the flag or value: an unknown
// subcommand or flag, a flag without its value, a malformed --share (not
// "key,uuid,MiB" with MiB a positive whole number), an empty --gpu-id,
// more than kMaxHookFlags flags.
absl::StatusOr<HookArgs> ParseHookArgs(const std::vector<std::string>& args);

// The fields of the OCI state (runtime-spec runtime.md "State") the hook
// uses.
struct OciState {
  std::string id;
  int pid = 0;         // the container's first process, > 0
  std::string bundle;  // absolute
};

// Parses the state JSON (at most a few KiB: bounded by the caller).
// Result on failure: InvalidArgument for text that is not JSON, or a state
// without a positive `pid` or an absolute `bundle`.
absl::StatusOr<OciState> ParseOciState(absl::string_view text);

// What one hook run does for a container.
struct LimitPlan {
  // Hard limit in bytes per GPU UUID; empty: nothing was asked.
  std::map<std::string, uint64_t> hard_bytes;
  // True when an earlier gdp-cdi-hook entry of the container's
  // createRuntime hooks applies the same plan: this run does nothing.
  bool done_by_earlier_entry = false;
};

// The limits `config` (the container's config.json) asks for, seen from
// the hook entry `own_args`. Every gdp-cdi-hook entry of
// hooks.createRuntime counts (args[0] named gdp-cdi-hook, args[1] one of
// its subcommands), plus own_args: shares add up per GPU (a key given
// twice counts once); each --gpu-id GPU takes NVIDIA's
// NVIDIA_GPU_MEMORY_LIMIT=<MiB> from process.env (with
// NVIDIA_GPU_MEMORY_REQUEST, if given, not above it); the first
// occurrence of a variable counts, as getenv.
// Result on failure: InvalidArgument naming what is wrong: an entry's
// args that do not parse, a share key given with two different values,
// a limit variable that is not a whole number of MiB from 1 to 2^44-1,
// NVIDIA_GPU_MEMORY_REQUEST above NVIDIA_GPU_MEMORY_LIMIT or without it
// (a soft reservation only, which this hook does not set), a GPU limited
// both by shares and by the env, a sum that overflows.
absl::StatusOr<LimitPlan> PlanLimits(const std::vector<std::string>& own_args,
                                     const nlohmann::json& config);

// Parses a whole number of MiB from 1 to 2^44 - 1 (bytes fit 64 bits).
// Result on failure: InvalidArgument naming `what` and the value.
absl::StatusOr<uint64_t> ParseMiB(absl::string_view what,
                                  absl::string_view value);

}  // namespace gdp::hook

#endif  // GDP_HOOK_LIMITS_H_
