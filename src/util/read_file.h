// Reading files from the host without trusting what is at the path: a FIFO,
// a device or a huge file in place of a token, config or state file must
// neither block the reader nor take its memory.
#ifndef GDP_UTIL_READ_FILE_H_
#define GDP_UTIL_READ_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace gdp {

struct ReadFileOptions {
  // The most the file may hold; a larger one is refused unread.
  size_t max_bytes = 1 << 20;
  // Whether a symlink at the path is followed. Files that Kubernetes mounts
  // (ConfigMaps, projected tokens) are symlinks into "..data"; the daemon's
  // own files (checkpoint, health state) never are.
  bool follow_symlinks = true;
  // What the file is, for messages: "cannot read <what> <path>: ..."; null:
  // the path alone.
  const char* what = nullptr;
};

// The whole content of the regular file at `path`. The path is stat'ed
// first and anything but a regular file is refused without being opened (a
// FIFO would block an open(), a device may act on one); it is then opened
// with O_NONBLOCK | O_NOCTTY | O_CLOEXEC (and O_NOFOLLOW unless
// follow_symlinks), and fstat'ed again, so a file swapped in meanwhile is
// refused the same way. A file whose size is over max_bytes is refused
// before a byte is read; one that grows past it while read (or a /proc or
// /sys file, whose size reads as 0) is read no further than max_bytes + 1.
// Thread-safe.
// Result on failure, the message naming the path (after `what`): the
// errno's status "cannot read <path>: <reason>" (NotFound,
// PermissionDenied, ...); FailedPrecondition "<path> is not a regular file
// (a FIFO)" (a symlink when not followed); ResourceExhausted "<path> is
// larger than N bytes". IsNotRegularFile and
// IsFileTooLarge tell the last two from errno statuses of the same code.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path,
                                            const ReadFileOptions& options);

// Whether `status` is ReadRegularFile's refusal of something that is not a
// regular file, or of a file over max_bytes.
bool IsNotRegularFile(const absl::Status& status);
bool IsFileTooLarge(const absl::Status& status);

}  // namespace gdp

#endif  // GDP_UTIL_READ_FILE_H_
