#include "device/memory_limit_support.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "util/read_file.h"

namespace gdp {
namespace {

// mountinfo escapes ' ', '\t', '\n' and '\\' as a backslash and three octal
// digits.
std::string Unescape(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' &&
        s[i + 1] <= '7' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
        s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 +
                                      (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> FindCgroup2Mount(absl::string_view mountinfo) {
  std::optional<std::string> first;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n')) {
    // "<id> <parent> <maj:min> <root> <mount point> <options> [optional
    // fields...] - <fs type> <source> <super options>"
    std::vector<absl::string_view> f =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 7) continue;
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 1 >= f.size() || f[dash + 1] != "cgroup2") continue;
    std::string point = Unescape(f[4]);
    if (point == "/sys/fs/cgroup") return point;
    if (!first.has_value()) first = std::move(point);
  }
  return first;
}

absl::StatusOr<std::optional<std::string>> ReadCgroup2Mount(
    const std::string& proc_root) {
  absl::StatusOr<std::string> text =
      ReadRegularFile(absl::StrCat(proc_root, "/self/mountinfo"),
                      {.max_bytes = 4 << 20, .what = "the mount table"});
  if (!text.ok()) return text.status();
  return FindCgroup2Mount(*text);
}

MemoryLimitSupport NodeMemoryLimitSupport(const MemoryLimitNode& node) {
  const std::string driver = node.driver_version.empty()
                                 ? std::string("of unknown version")
                                 : node.driver_version;
  if (!node.nvml_has_limits) {
    return {false,
            absl::StrCat("NVML has no memory-limit calls "
                         "(nvmlDeviceSetMemoryLimits_v1; driver ",
                         driver, ", R", kMemoryLimitsDriverMajor, " needed)")};
  }
  int major = 0;
  const absl::string_view head = absl::string_view(node.driver_version)
                                     .substr(0, node.driver_version.find('.'));
  if (!absl::SimpleAtoi(head, &major) || major < kMemoryLimitsDriverMajor) {
    return {false, absl::StrCat("driver ", driver, " is older than R",
                                kMemoryLimitsDriverMajor)};
  }
  if (!node.cgroup2_mount.has_value()) {
    return {false,
            "no cgroup v2 hierarchy is mounted (the driver limits cgroup v2 "
            "directories)"};
  }
  return {true, ""};
}

MemoryLimitSupport GpuMemoryLimitSupport(const MemoryLimitSupport& node,
                                         const GpuInfo& gpu) {
  if (!node.enforced) return node;
  if (gpu.mig_enabled) {
    return {false, absl::StrCat("GPU ", gpu.index,
                                " is in MIG mode: the driver limits the "
                                "memory of whole GPUs only")};
  }
  return node;
}

}  // namespace gdp
