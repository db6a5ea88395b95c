#include "hook/cgroup.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "util/read_file.h"

namespace gdp::hook {
namespace {

// Decodes mountinfo's octal escapes ("\040" for a space).
std::string Unescape(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      bool octal = true;
      for (size_t k = 1; k <= 3; ++k) {
        octal = octal && s[i + k] >= '0' && s[i + k] <= '7';
      }
      if (octal) {
        out.push_back(static_cast<char>(
            (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

bool HasDotDot(absl::string_view path) {
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<Cgroup2Mount> FindCgroup2Mount(absl::string_view mountinfo) {
  std::optional<Cgroup2Mount> first;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n')) {
    // id parent major:minor root mount-point options [optional...] - fstype
    // source super-options
    std::vector<absl::string_view> f =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 1 >= f.size() || f[dash + 1] != "cgroup2") continue;
    if (dash < 6) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mountinfo line '", line.substr(0, 200), "' does not parse"));
    }
    Cgroup2Mount m{Unescape(f[3]), Unescape(f[4])};
    if (m.root == "/") return m;
    if (!first.has_value()) first = std::move(m);
  }
  if (first.has_value()) return *first;
  return absl::NotFoundError(
      "no cgroup2 file system is mounted (a cgroup v1 host): GPU memory "
      "limits need cgroup v2");
}

absl::StatusOr<std::string> UnifiedCgroupPath(absl::string_view proc_cgroup) {
  for (absl::string_view line : absl::StrSplit(proc_cgroup, '\n')) {
    if (!absl::StartsWith(line, "0::")) continue;
    absl::string_view path = line.substr(3);
    if (path.empty() || path.front() != '/') {
      return absl::InvalidArgumentError(absl::StrCat(
          "cgroup v2 path '", path.substr(0, 200), "' is not absolute"));
    }
    if (HasDotDot(path)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cgroup v2 path '", path.substr(0, 200),
                       "' is outside this process's cgroup namespace"));
    }
    return std::string(path);
  }
  return absl::NotFoundError(
      "no cgroup v2 (\"0::\") line: the process is in no cgroup v2 "
      "hierarchy (a cgroup v1 host); GPU memory limits need cgroup v2");
}

absl::StatusOr<std::string> ContainerCgroupDir(const std::string& proc_root,
                                               int pid) {
  std::string mi_path = absl::StrCat(proc_root, "/self/mountinfo");
  absl::StatusOr<std::string> mountinfo = ReadRegularFile(
      mi_path, {.max_bytes = kMaxMountinfoBytes, .what = "mountinfo"});
  if (!mountinfo.ok()) return mountinfo.status();
  absl::StatusOr<Cgroup2Mount> mount = FindCgroup2Mount(*mountinfo);
  if (!mount.ok()) {
    return absl::Status(mount.status().code(),
                        absl::StrCat(mi_path, ": ", mount.status().message()));
  }
  std::string cg_path = absl::StrCat(proc_root, "/", pid, "/cgroup");
  absl::StatusOr<std::string> text = ReadRegularFile(
      cg_path, {.max_bytes = kMaxProcCgroupBytes, .what = "cgroup file"});
  if (!text.ok()) return text.status();
  absl::StatusOr<std::string> path = UnifiedCgroupPath(*text);
  if (!path.ok()) {
    return absl::Status(path.status().code(),
                        absl::StrCat(cg_path, ": ", path.status().message()));
  }
  std::string rel = *path;
  if (mount->root != "/") {
    std::string root = mount->root;
    if (rel != root && !absl::StartsWith(rel, root + "/")) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cgroup ", rel, " of process ", pid, " is outside the cgroup2 mount ",
          mount->mount_point, " (root ", root, ")"));
    }
    rel = rel.substr(root.size());
    if (rel.empty()) rel = "/";
  }
  if (rel == "/") {
    return absl::FailedPreconditionError(absl::StrCat(
        "process ", pid,
        " is in the root cgroup: refusing to limit the whole host (the "
        "runtime gave the container no cgroup of its own)"));
  }
  std::string dir = mount->mount_point;
  while (!dir.empty() && dir.back() == '/') dir.pop_back();
  dir += rel;
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    int err = errno;
    return absl::NotFoundError(absl::StrCat("cgroup directory ", dir,
                                            " of process ", pid, ": ",
                                            std::strerror(err)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat("cgroup ", dir, " of process ", pid,
                                            " is not a directory"));
  }
  return dir;
}

}  // namespace gdp::hook
