// Paths inside a directory tree that stands for another machine's root: the
// host's driver root as mounted into the plugin's container, or a test tree.
// Symlinks in such a tree are resolved as that machine would resolve them.
#ifndef GDP_CDI_ROOT_PATH_H_
#define GDP_CDI_ROOT_PATH_H_

#include <string>

#include "absl/status/statusor.h"

namespace gdp::cdi {

// `path` (absolute, as seen inside `root`) as a path outside it:
// JoinRoot("/", "/dev/nvidia0") == "/dev/nvidia0",
// JoinRoot("/run/nvidia/driver/", "/usr/lib") == "/run/nvidia/driver/usr/lib".
// An empty root means "/".
std::string JoinRoot(const std::string& root, const std::string& path);

// Resolves every symlink in `path` (absolute, as seen inside `root`) the way
// the machine whose root `root` is would: an absolute link target starts
// again at `root`, and ".." never climbs above it. Returns the resolved path
// as seen inside `root` ("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"),
// without "." or ".." components.
// Result on failure: NotFound when a component does not exist;
// FailedPrecondition for more than 40 links (a loop) or a non-directory used
// as a directory; Internal for other errors. Messages name the path and give
// the errno text.
absl::StatusOr<std::string> ResolveInRoot(const std::string& root,
                                          const std::string& path);

}  // namespace gdp::cdi

#endif  // GDP_CDI_ROOT_PATH_H_
