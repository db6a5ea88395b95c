// Creating the directories the daemon keeps its files and sockets in with
// the mode it means, whatever the umask it was started with.
#ifndef GDP_UTIL_MAKE_DIRS_H_
#define GDP_UTIL_MAKE_DIRS_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"

namespace gdp {

// The modes of what the daemon creates: directories others (the kubelet,
// the container runtime, NFD) read are 0755; the state and checkpoint
// directories, which only the daemon reads, 0700. Never world-writable: a
// writable CDI or registration directory would let any local user inject
// devices into containers or register a plugin with the kubelet.
inline constexpr mode_t kPublicDirMode = 0755;
inline constexpr mode_t kPrivateDirMode = 0700;

// Creates `dir` and any missing parent, each created one with exactly
// `mode` (mkdir, then chmod, so the umask does not widen or narrow it).
// Directories already there are left as they are. Thread-safe (a directory
// created meanwhile by someone else is left as it is).
// Result on failure: the errno's status naming the directory that could not
// be created (FailedPrecondition for a path component that is a file).
absl::Status MakeDirs(const std::string& dir, mode_t mode);

}  // namespace gdp

#endif  // GDP_UTIL_MAKE_DIRS_H_
