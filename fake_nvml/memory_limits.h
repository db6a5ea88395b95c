// Per-cgroup GPU memory limits (nvmlDevice{Set,Get}MemoryLimits_v1, R615)
// as the fake keeps them: one small text file shared by every process that
// loads the library or runs `fake-nvml memory-limits`, so that a limit set
// by one process (a container runtime's hook) is seen by another (a test).
// Shared by the library and the tool; see README.md, "Memory limits".
//
// An entry is keyed by the GPU's UUID and the cgroup directory's identity
// (device and inode numbers), so two spellings of one path are one entry,
// and a cgroup removed (or removed and made again under the same path)
// has no limits any more: such stale entries are dropped when read and
// pruned at the next update.
#ifndef GDP_FAKE_NVML_MEMORY_LIMITS_H_
#define GDP_FAKE_NVML_MEMORY_LIMITS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gdp::fake_nvml {

// NVML_DEVICE_MEMORY_LIMIT_MAX: no hard limit.
inline constexpr unsigned long long kMemoryLimitMax = ~0ull;
// Bounds of the limits file: entries (after pruning stale ones) and bytes.
inline constexpr size_t kMaxMemoryLimitEntries = 1024;
inline constexpr size_t kMaxMemoryLimitsFileBytes = 8 << 20;
// Longest cgroup path accepted (PATH_MAX less its NUL).
inline constexpr size_t kMaxCgroupPathBytes = 4095;

// Whether a driver of `driver_version` ("615.12.01") has the memory-limit
// API: a major version of 615 or more.
bool HasMemoryLimits(absl::string_view driver_version);

// A cgroup v2 directory: the path it was named by and its identity.
struct CgroupDir {
  std::string path;
  uint64_t dev = 0;
  uint64_t ino = 0;
};

// Checks an NVML nameSpace. InvalidArgument for null, empty, relative,
// longer than kMaxCgroupPathBytes or holding a newline; NotFound when it
// names nothing, or something other than a directory on a cgroup2
// filesystem (statfs magic CGROUP2_SUPER_MAGIC).
absl::StatusOr<CgroupDir> ResolveCgroup(const char* name_space);

// The calling process's own cgroup v2 directory: the "0::" line of
// /proc/self/cgroup under the first cgroup2 mount of /proc/self/mountinfo
// (resolved as ResolveCgroup does); nullopt when either is missing.
std::optional<CgroupDir> OwnCgroup();

// The limit values NVML accepts for a GPU of `memory_total` bytes:
// InvalidArgument when soft > hard, or when either, other than
// kMemoryLimitMax, exceeds memory_total.
absl::Status CheckMemoryLimits(unsigned long long soft, unsigned long long hard,
                               unsigned long long memory_total);

// One cgroup's limits on one GPU.
struct MemoryLimitEntry {
  std::string uuid;  // the GPU's
  unsigned gpu = 0;  // its NVML index when the limit was set
  CgroupDir cgroup;  // path as last set
  unsigned long long soft = 0;
  unsigned long long hard = kMemoryLimitMax;
};

// Where the limits live: `memory_limits_env` ($FAKE_NVML_MEMORY_LIMITS)
// if not empty, else "memory-limits" in the directory of `control_env`
// ($FAKE_NVML_CONTROL) if that is not empty, else nullopt (no place).
std::optional<std::string> MemoryLimitsPath(absl::string_view memory_limits_env,
                                            absl::string_view control_env);

// Every live entry of the file at `path` (none when it does not exist),
// ordered by GPU index, then cgroup path. The file is replaced
// atomically by writers, so it needs no lock to read.
// Errors: DataLoss for a malformed or oversized file, Internal for an I/O
// error; both name the file.
absl::StatusOr<std::vector<MemoryLimitEntry>> ReadMemoryLimits(
    const std::string& path);

// The limits of `cgroup` on GPU `uuid` in the file at `path`: soft 0 and
// hard kMemoryLimitMax where none are set. Errors as ReadMemoryLimits.
absl::StatusOr<MemoryLimitEntry> LookupMemoryLimits(const std::string& path,
                                                    const std::string& uuid,
                                                    const CgroupDir& cgroup);

// Records `entry` (replacing the one of the same GPU and cgroup; soft 0
// with hard kMemoryLimitMax removes it), pruning stale entries, under an
// exclusive flock on "<path>.lock"; the file is written to a temporary
// file and renamed over `path`. ResourceExhausted when more than
// kMaxMemoryLimitEntries would remain; other errors as ReadMemoryLimits.
absl::Status UpdateMemoryLimits(const std::string& path,
                                const MemoryLimitEntry& entry);

// `entry` as nvidia-smi prints it ("<n> MiB" or "max") and as JSON.
std::string FormatMemoryLimitText(const MemoryLimitEntry& entry);
std::string FormatMemoryLimitJson(const MemoryLimitEntry& entry);

}  // namespace gdp::fake_nvml

#endif  // GDP_FAKE_NVML_MEMORY_LIMITS_H_
