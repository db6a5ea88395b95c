// Files that readers must only ever see whole (the CDI spec, the node label
// file): written beside the target and renamed over it.
#ifndef GDP_UTIL_ATOMIC_FILE_H_
#define GDP_UTIL_ATOMIC_FILE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "util/make_dirs.h"

namespace gdp {

// Replaces `path` with `content`, mode `mode`, atomically: the content goes
// to a new temporary file in the same directory named ".<file name>.XXXXXX"
// (dot-files, which NFD and CDI readers skip), is fsynced and renamed over
// `path`, then the directory is fsynced. Creates the directory (and its
// parents) if missing, mode `dir_mode` whatever the umask (MakeDirs).
// Thread-safe; concurrent calls leave one complete
// file. A reader opening `path` at any time sees the old or the new content.
// With `durable` false nothing is fsynced: the file is still replaced
// whole (a crash of the process leaves the old or the new content), but a
// power loss may undo the change; for records a reboot makes moot.
// Result on failure: InvalidArgument for a path without a file name; else
// the errno's status (PermissionDenied, NotFound, ...) with a message naming
// the file or directory; no temporary file is left.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view content, mode_t mode,
                                 mode_t dir_mode = kPublicDirMode,
                                 bool durable = true);

// Removes `path`; a missing file is not an error.
// Result on failure: the errno's status, the message naming the path.
absl::Status RemoveFile(const std::string& path);

}  // namespace gdp

#endif  // GDP_UTIL_ATOMIC_FILE_H_
