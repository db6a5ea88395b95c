#include "cdi/memory_limit.h"

#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cdi/nvidia_hooks.h"

namespace gdp::cdi {
namespace {

constexpr size_t kMaxShareKey = 128;
// NVML's UUIDs are "GPU-" + 36 characters; room for other spellings.
constexpr size_t kMaxUuid = 96;

bool IsAlnum(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c));
}

absl::Status CheckUuid(const std::string& uuid) {
  if (uuid.empty()) return absl::InvalidArgumentError("GPU UUID is empty");
  if (uuid.size() > kMaxUuid) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GPU UUID '", uuid, "' is longer than ", kMaxUuid, " characters"));
  }
  for (char c : uuid) {
    if (!IsAlnum(c) && c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU UUID '", uuid, "' has the invalid character '",
                       std::string(1, c), "'"));
    }
  }
  if (absl::StartsWithIgnoreCase(uuid, "MIG-")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", uuid,
        "' is a MIG device: NVML's memory limits apply to whole GPUs only"));
  }
  return absl::OkStatus();
}

absl::Status CheckShareKey(const std::string& key) {
  if (key.empty()) return absl::InvalidArgumentError("share key is empty");
  if (key.size() > kMaxShareKey) {
    return absl::InvalidArgumentError(absl::StrCat(
        "share key '", key, "' is longer than ", kMaxShareKey, " characters"));
  }
  for (char c : key) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') {
      return absl::InvalidArgumentError(
          absl::StrCat("share key '", key, "' has the invalid character '",
                       std::string(1, c), "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckHook(const MemoryLimitHook& hook) {
  if (hook.path.empty() || hook.path.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "memory-limit hook path '", hook.path, "' is not absolute"));
  }
  if (hook.driver_root.empty() || hook.driver_root.front() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("driver root '", hook.driver_root, "' is not absolute"));
  }
  return absl::OkStatus();
}

// The hook entry: args[0] (for NVIDIA's, "nvidia-ctk", "hook" where the
// path is nvidia-ctk), the subcommand, the driver root, then `extra`.
CdiDevice::Hook HookEntry(const MemoryLimitHook& hook,
                          std::vector<std::string> extra) {
  CdiDevice::Hook h;
  h.hook_name = kMemoryLimitHookStage;
  h.path = hook.path;
  if (hook.kind == MemoryLimitHook::Kind::kOurs) {
    h.args = {kOurHookName, kOurHookCommand};
  } else {
    // As NVIDIA's other hooks: "nvidia-ctk hook ..." for nvidia-ctk.
    h.args = NvidiaHookCommand(hook.path);
    h.args.push_back(kNvidiaHookCommand);
  }
  h.args.push_back("--driver-root");
  h.args.push_back(hook.driver_root);
  for (std::string& a : extra) h.args.push_back(std::move(a));
  h.timeout_seconds = kMemoryLimitHookTimeoutSeconds;
  return h;
}

std::vector<std::string> NvidiaEnv(uint64_t mib) {
  return {absl::StrCat(kNvidiaLimitEnv, "=", mib),
          absl::StrCat(kNvidiaRequestEnv, "=0")};
}

}  // namespace

absl::StatusOr<uint64_t> LimitMiB(uint64_t limit_bytes) {
  if (limit_bytes == 0) {
    return absl::InvalidArgumentError("GPU memory limit is 0");
  }
  if (limit_bytes % kMiB != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("GPU memory limit ", limit_bytes,
                     " bytes is not a whole number of MiB"));
  }
  return limit_bytes / kMiB;
}

std::string ReplicaShareKey(const std::string& gpu_uuid, int replica) {
  return absl::StrCat(gpu_uuid, ".replica-", replica);
}

absl::Status AddShareLimit(const MemoryLimitHook& hook,
                           const std::string& gpu_uuid, uint64_t limit_bytes,
                           const std::string& share_key, CdiDevice* device) {
  if (absl::Status s = CheckHook(hook); !s.ok()) return s;
  if (absl::Status s = CheckUuid(gpu_uuid); !s.ok()) return s;
  if (absl::Status s = CheckShareKey(share_key); !s.ok()) return s;
  absl::StatusOr<uint64_t> mib = LimitMiB(limit_bytes);
  if (!mib.ok()) return mib.status();
  if (hook.kind == MemoryLimitHook::Kind::kOurs) {
    device->hooks.push_back(HookEntry(
        hook, {"--share", absl::StrCat(share_key, ",", gpu_uuid, ",", *mib)}));
    return absl::OkStatus();
  }
  for (std::string& e : NvidiaEnv(*mib)) device->env.push_back(std::move(e));
  device->hooks.push_back(HookEntry(hook, {"--gpu-id", gpu_uuid}));
  return absl::OkStatus();
}

absl::Status AddEnvLimitHook(const MemoryLimitHook& hook,
                             const std::string& gpu_uuid, CdiDevice* device) {
  if (absl::Status s = CheckHook(hook); !s.ok()) return s;
  if (absl::Status s = CheckUuid(gpu_uuid); !s.ok()) return s;
  if (hook.kind != MemoryLimitHook::Kind::kNvidia) {
    return absl::InvalidArgumentError(
        "gdp-cdi-hook takes device-plugin limits as shares (--share), not "
        "from the container's env");
  }
  device->hooks.push_back(HookEntry(hook, {"--gpu-id", gpu_uuid}));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> NvidiaAllocateLimitEnv(
    const std::map<std::string, uint64_t>& limit_bytes_by_uuid) {
  std::set<uint64_t> limits;
  for (const auto& entry : limit_bytes_by_uuid) {
    if (absl::Status s = CheckUuid(entry.first); !s.ok()) return s;
    absl::StatusOr<uint64_t> mib = LimitMiB(entry.second);
    if (!mib.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU ", entry.first, ": ", mib.status().message()));
    }
    limits.insert(*mib);
  }
  if (limits.empty()) return std::vector<std::string>{};
  if (limits.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the container's GPUs have ", limits.size(),
        " different memory limits; NVIDIA's hook (", kNvidiaLimitEnv,
        ") applies one limit to all of them: use --memory-limit-hook=gdp"));
  }
  return NvidiaEnv(*limits.begin());
}

absl::Status CheckContainerShares(const MemoryLimitHook& hook,
                                  const std::vector<ShareLimit>& shares) {
  std::set<std::string> gpus;
  std::set<uint64_t> limits;
  for (const ShareLimit& s : shares) {
    absl::StatusOr<uint64_t> mib = LimitMiB(s.limit_bytes);
    if (!mib.ok()) return mib.status();
    if (hook.kind == MemoryLimitHook::Kind::kOurs) continue;
    if (!gpus.insert(s.gpu_uuid).second) {
      return absl::FailedPreconditionError(absl::StrCat(
          "two shares of GPU ", s.gpu_uuid,
          " in one container: NVIDIA's hook cannot add their limits up "
          "(use --memory-limit-hook=gdp)"));
    }
    limits.insert(*mib);
  }
  if (limits.size() > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shares with ", limits.size(),
        " different memory limits in one container: NVIDIA's hook (",
        kNvidiaLimitEnv,
        ") applies one limit to all of them (use --memory-limit-hook=gdp)"));
  }
  return absl::OkStatus();
}

}  // namespace gdp::cdi
