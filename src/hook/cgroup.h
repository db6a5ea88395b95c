// Finding a container's own leaf cgroup (v2) from the host, as a
// createRuntime hook sees it: the "0::" line of /proc/<pid>/cgroup joined
// with where the cgroup2 file system is mounted (/proc/self/mountinfo):
// /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one.
#ifndef GDP_HOOK_CGROUP_H_
#define GDP_HOOK_CGROUP_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gdp::hook {

// The most of /proc/self/mountinfo and /proc/<pid>/cgroup read.
inline constexpr size_t kMaxMountinfoBytes = 4 << 20;
inline constexpr size_t kMaxProcCgroupBytes = 64 << 10;

struct Cgroup2Mount {
  std::string root;         // the mounted cgroup's path ("/" for the host's)
  std::string mount_point;  // where it is mounted, escapes decoded
};

// The first cgroup2 mount of `mountinfo` (proc(5) format) whose root is
// "/", else the first cgroup2 mount.
// Result on failure: NotFound "no cgroup2 file system is mounted" (a
// cgroup v1 host); InvalidArgument for a cgroup2 line that does not parse.
absl::StatusOr<Cgroup2Mount> FindCgroup2Mount(absl::string_view mountinfo);

// The cgroup v2 path of /proc/<pid>/cgroup's text: its "0::" line.
// Result on failure: NotFound when there is no "0::" line (cgroup v1
// only); InvalidArgument for a path that is not absolute or has a ".."
// component (outside this process's cgroup namespace).
absl::StatusOr<std::string> UnifiedCgroupPath(absl::string_view proc_cgroup);

// The directory of process `pid`'s own cgroup v2: reads
// <proc_root>/self/mountinfo and <proc_root>/<pid>/cgroup (bounded) and
// joins them (the path under the mount's root).
// Result on failure: the errors above, each naming the file; NotFound when
// the directory does not exist; FailedPrecondition when the path is the
// root cgroup ("/": a limit there would limit the whole host) or lies
// outside the mount's root.
absl::StatusOr<std::string> ContainerCgroupDir(const std::string& proc_root,
                                               int pid);

}  // namespace gdp::hook

#endif  // GDP_HOOK_CGROUP_H_
