#include "fake_nvml/memory_limits.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "fake_nvml/shared_file.h"

namespace gdp::fake_nvml {
namespace {

constexpr char kHeader[] =
    "# fake NVML memory limits: uuid gpu dev ino soft hard cgroup";

std::string ErrnoText(int err) { return std::strerror(err); }

// Whether the directory an entry names is still the one it was set on.
bool Live(const CgroupDir& cgroup) {
  struct stat st;
  return stat(cgroup.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
         static_cast<uint64_t>(st.st_dev) == cgroup.dev &&
         static_cast<uint64_t>(st.st_ino) == cgroup.ino;
}

bool SameKey(const MemoryLimitEntry& a, const MemoryLimitEntry& b) {
  return a.uuid == b.uuid && a.cgroup.dev == b.cgroup.dev &&
         a.cgroup.ino == b.cgroup.ino;
}

// Every entry of `text`, live or not.
absl::StatusOr<std::vector<MemoryLimitEntry>> Parse(const std::string& path,
                                                    const std::string& text) {
  std::vector<MemoryLimitEntry> entries;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<absl::string_view> parts =
        absl::StrSplit(line, absl::MaxSplits(' ', 6));
    MemoryLimitEntry e;
    if (parts.size() != 7 || parts[0].empty() ||
        !absl::SimpleAtoi(parts[1], &e.gpu) ||
        !absl::SimpleAtoi(parts[2], &e.cgroup.dev) ||
        !absl::SimpleAtoi(parts[3], &e.cgroup.ino) ||
        !absl::SimpleAtoi(parts[4], &e.soft) ||
        !absl::SimpleAtoi(parts[5], &e.hard) || parts[6].empty() ||
        parts[6][0] != '/') {
      return absl::DataLossError(absl::StrCat(
          "memory limits file ", path, ":", line_number, ": malformed entry"));
    }
    e.uuid = std::string(parts[0]);
    e.cgroup.path = std::string(parts[6]);
    entries.push_back(std::move(e));
    if (entries.size() > kMaxMemoryLimitEntries) {
      return absl::DataLossError(
          absl::StrCat("memory limits file ", path, ": more than ",
                       kMaxMemoryLimitEntries, " entries"));
    }
  }
  return entries;
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string MiB(unsigned long long bytes) {
  if (bytes == kMemoryLimitMax) return "max";
  return absl::StrCat(bytes >> 20, " MiB");
}

}  // namespace

bool HasMemoryLimits(absl::string_view driver_version) {
  const absl::string_view major =
      driver_version.substr(0, driver_version.find('.'));
  unsigned value = 0;
  return absl::SimpleAtoi(major, &value) && value >= 615;
}

absl::StatusOr<CgroupDir> ResolveCgroup(const char* name_space) {
  if (name_space == nullptr) {
    return absl::InvalidArgumentError("nameSpace is null");
  }
  const size_t length = strnlen(name_space, kMaxCgroupPathBytes + 1);
  const absl::string_view path(name_space, length);
  if (length > kMaxCgroupPathBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nameSpace is longer than ", kMaxCgroupPathBytes, " bytes"));
  }
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("nameSpace '", path, "' is not an absolute path"));
  }
  if (path.find('\n') != absl::string_view::npos) {
    return absl::InvalidArgumentError("nameSpace holds a newline");
  }
  CgroupDir dir;
  dir.path = std::string(path);
  struct stat st;
  if (stat(dir.path.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cgroup ", dir.path, ": ", ErrnoText(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(
        absl::StrCat("cgroup ", dir.path, ": not a directory"));
  }
  struct statfs fs;
  if (statfs(dir.path.c_str(), &fs) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cgroup ", dir.path, ": ", ErrnoText(errno)));
  }
  if (static_cast<unsigned long>(fs.f_type) != CGROUP2_SUPER_MAGIC) {
    return absl::NotFoundError(
        absl::StrCat("cgroup ", dir.path, ": not on a cgroup2 filesystem"));
  }
  dir.dev = static_cast<uint64_t>(st.st_dev);
  dir.ino = static_cast<uint64_t>(st.st_ino);
  return dir;
}

std::optional<CgroupDir> OwnCgroup() {
  std::string text;
  if (!ReadSharedFile("memory limits", "/proc/self/mountinfo",
                      kMaxMemoryLimitsFileBytes, &text)
           .ok()) {
    return std::nullopt;
  }
  std::string mount;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS... - FSTYPE SOURCE ...
    const size_t dash = line.find(" - ");
    if (dash == absl::string_view::npos ||
        !absl::StartsWith(line.substr(dash + 3), "cgroup2 ")) {
      continue;
    }
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line.substr(0, dash), ' ');
    if (fields.size() >= 5) mount = std::string(fields[4]);
    break;
  }
  if (mount.empty() || !ReadSharedFile("memory limits", "/proc/self/cgroup",
                                       kMaxMemoryLimitsFileBytes, &text)
                            .ok()) {
    return std::nullopt;
  }
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "0::")) continue;
    const std::string path = line == "/" ? mount : absl::StrCat(mount, line);
    absl::StatusOr<CgroupDir> dir = ResolveCgroup(path.c_str());
    if (!dir.ok()) return std::nullopt;
    return *std::move(dir);
  }
  return std::nullopt;
}

absl::Status CheckMemoryLimits(unsigned long long soft, unsigned long long hard,
                               unsigned long long memory_total) {
  if (soft > hard) {
    return absl::InvalidArgumentError(
        absl::StrCat("soft limit ", soft, " is above the hard limit ", hard));
  }
  if (hard != kMemoryLimitMax && hard > memory_total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hard limit ", hard, " is above the GPU's memory ", memory_total));
  }
  if (soft != kMemoryLimitMax && soft > memory_total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "soft limit ", soft, " is above the GPU's memory ", memory_total));
  }
  return absl::OkStatus();
}

std::optional<std::string> MemoryLimitsPath(absl::string_view memory_limits_env,
                                            absl::string_view control_env) {
  if (!memory_limits_env.empty()) return std::string(memory_limits_env);
  if (control_env.empty()) return std::nullopt;
  const size_t slash = control_env.rfind('/');
  if (slash == absl::string_view::npos) return std::string("memory-limits");
  return absl::StrCat(control_env.substr(0, slash + 1), "memory-limits");
}

absl::StatusOr<std::vector<MemoryLimitEntry>> ReadMemoryLimits(
    const std::string& path) {
  std::string text;
  if (absl::Status s = ReadSharedFile("memory limits", path,
                                      kMaxMemoryLimitsFileBytes, &text);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<MemoryLimitEntry>> all = Parse(path, text);
  if (!all.ok()) return all.status();
  std::vector<MemoryLimitEntry> live;
  for (MemoryLimitEntry& e : *all) {
    if (Live(e.cgroup)) live.push_back(std::move(e));
  }
  return live;
}

absl::StatusOr<MemoryLimitEntry> LookupMemoryLimits(const std::string& path,
                                                    const std::string& uuid,
                                                    const CgroupDir& cgroup) {
  absl::StatusOr<std::vector<MemoryLimitEntry>> entries =
      ReadMemoryLimits(path);
  if (!entries.ok()) return entries.status();
  MemoryLimitEntry key;
  key.uuid = uuid;
  key.cgroup = cgroup;
  for (const MemoryLimitEntry& e : *entries) {
    if (SameKey(e, key)) return e;
  }
  return key;
}

absl::Status UpdateMemoryLimits(const std::string& path,
                                const MemoryLimitEntry& entry) {
  return WithSharedFileLock("memory limits", path, [&]() -> absl::Status {
    absl::StatusOr<std::vector<MemoryLimitEntry>> entries =
        ReadMemoryLimits(path);
    if (!entries.ok()) return entries.status();
    const bool clear = entry.soft == 0 && entry.hard == kMemoryLimitMax;
    bool replaced = false;
    std::vector<MemoryLimitEntry> kept;
    for (MemoryLimitEntry& e : *entries) {
      if (SameKey(e, entry)) {
        replaced = true;
        if (!clear) kept.push_back(entry);
      } else {
        kept.push_back(std::move(e));
      }
    }
    if (!replaced && !clear) kept.push_back(entry);
    std::sort(kept.begin(), kept.end(),
              [](const MemoryLimitEntry& x, const MemoryLimitEntry& y) {
                return std::tie(x.gpu, x.cgroup.path, x.uuid) <
                       std::tie(y.gpu, y.cgroup.path, y.uuid);
              });
    if (kept.size() > kMaxMemoryLimitEntries) {
      return absl::ResourceExhaustedError(
          absl::StrCat("memory limits file ", path, ": more than ",
                       kMaxMemoryLimitEntries, " cgroups limited"));
    }
    std::string text = absl::StrCat(kHeader, "\n");
    for (const MemoryLimitEntry& e : kept) {
      absl::StrAppend(&text, e.uuid, " ", e.gpu, " ", e.cgroup.dev, " ",
                      e.cgroup.ino, " ", e.soft, " ", e.hard, " ",
                      e.cgroup.path, "\n");
    }
    return WriteSharedFile("memory limits", path, text);
  });
}

std::string FormatMemoryLimitText(const MemoryLimitEntry& entry) {
  return absl::StrCat("gpu: ", entry.gpu, "\nuuid: ", entry.uuid,
                      "\nnamespace: ", entry.cgroup.path,
                      "\nsoft limit: ", MiB(entry.soft),
                      "\nhard limit: ", MiB(entry.hard), "\n");
}

std::string FormatMemoryLimitJson(const MemoryLimitEntry& entry) {
  return absl::StrCat(
      "{\"gpu\": ", entry.gpu, ", \"uuid\": ", JsonString(entry.uuid),
      ", \"cgroup\": ", JsonString(entry.cgroup.path),
      ", \"soft\": ", entry.soft, ", \"hard\": ", entry.hard, "}");
}

}  // namespace gdp::fake_nvml
