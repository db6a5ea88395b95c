#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

absl::Status WriteAll(int fd, absl::string_view content,
                      const std::string& path) {
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, absl::StrCat("writing ", path));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status SyncDir(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("opening ", dir));
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return absl::ErrnoToStatus(err, absl::StrCat("syncing ", dir));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view content, mode_t mode,
                                 mode_t dir_mode, bool durable) {
  const std::filesystem::path target(path);
  if (!target.has_filename()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' names no file"));
  }
  const std::string dir =
      target.has_parent_path() ? target.parent_path().string() : ".";
  if (absl::Status s = MakeDirs(dir, dir_mode); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat(s.message(), " (for ", path, ")"));
  }
  std::string tmp =
      absl::StrCat(dir, "/.", target.filename().string(), ".XXXXXX");
  int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("creating a temporary file in ", dir, " for ",
                            target.filename().string()));
  }
  absl::Status s = WriteAll(fd, content, tmp);
  if (s.ok() && fchmod(fd, mode) != 0) {
    s = absl::ErrnoToStatus(errno, absl::StrCat("setting the mode of ", tmp));
  }
  if (s.ok() && durable && fsync(fd) != 0) {
    s = absl::ErrnoToStatus(errno, absl::StrCat("syncing ", tmp));
  }
  if (close(fd) != 0 && s.ok()) {
    s = absl::ErrnoToStatus(errno, absl::StrCat("closing ", tmp));
  }
  if (s.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    s = absl::ErrnoToStatus(errno,
                            absl::StrCat("renaming ", tmp, " to ", path));
  }
  if (!s.ok()) {
    unlink(tmp.c_str());
    return s;
  }
  return durable ? SyncDir(dir) : absl::OkStatus();
}

absl::Status RemoveFile(const std::string& path) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::ErrnoToStatus(errno, absl::StrCat("removing ", path));
  }
  return absl::OkStatus();
}

}  // namespace gdp
