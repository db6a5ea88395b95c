#include "util/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

constexpr char kNotRegularPayload[] = "gdp/read_file/not_regular";
constexpr char kTooLargePayload[] = "gdp/read_file/too_large";

const char* KindOf(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a file";
}

absl::Status NotRegular(absl::string_view path, mode_t mode) {
  absl::Status s = absl::FailedPreconditionError(
      absl::StrCat(path, " is not a regular file (", KindOf(mode), ")"));
  s.SetPayload(kNotRegularPayload, absl::Cord());
  return s;
}

absl::Status TooLarge(absl::string_view path, size_t max_bytes) {
  absl::Status s = absl::ResourceExhaustedError(
      absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
  s.SetPayload(kTooLargePayload, absl::Cord());
  return s;
}

// A regular file's size over `max` (a /proc or /sys file reads as 0).
bool Over(const struct stat& st, size_t max) {
  return st.st_size > 0 && static_cast<uint64_t>(st.st_size) > max;
}

}  // namespace

absl::StatusOr<std::string> ReadRegularFile(const std::string& path,
                                            const ReadFileOptions& options) {
  const std::string name =
      options.what == nullptr ? path : absl::StrCat(options.what, " ", path);
  auto error = [&name](int err, const char* what) {
    return absl::ErrnoToStatus(err, absl::StrCat("cannot ", what, " ", name));
  };
  struct stat st;
  if ((options.follow_symlinks ? stat(path.c_str(), &st)
                               : lstat(path.c_str(), &st)) != 0) {
    return error(errno, "read");
  }
  if (!S_ISREG(st.st_mode)) return NotRegular(name, st.st_mode);
  if (Over(st, options.max_bytes)) return TooLarge(name, options.max_bytes);

  int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  if (!options.follow_symlinks) flags |= O_NOFOLLOW;
  const int fd = open(path.c_str(), flags);
  if (fd < 0) return error(errno, "open");
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  if (fstat(fd, &st) != 0) return error(errno, "stat");
  if (!S_ISREG(st.st_mode)) return NotRegular(name, st.st_mode);
  if (Over(st, options.max_bytes)) return TooLarge(name, options.max_bytes);

  std::string content;
  content.reserve(static_cast<size_t>(st.st_size));
  char buffer[16384];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return error(errno, "read");
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > options.max_bytes) {
      return TooLarge(name, options.max_bytes);
    }
  }
  return content;
}

bool IsNotRegularFile(const absl::Status& status) {
  return status.GetPayload(kNotRegularPayload).has_value();
}

bool IsFileTooLarge(const absl::Status& status) {
  return status.GetPayload(kTooLargePayload).has_value();
}

}  // namespace gdp
