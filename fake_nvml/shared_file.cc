#include "fake_nvml/shared_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gdp::fake_nvml {
namespace {

// "<what> file <file>: <error>" ("memory limits file ..."), or with
// `kind` "lock" for the lock file.
absl::Status Errno(const std::string& what, const char* kind,
                   const std::string& file, int err) {
  return absl::InternalError(
      absl::StrCat(what, " ", kind, " ", file, ": ", std::strerror(err)));
}

}  // namespace

absl::Status ReadSharedFile(const std::string& what, const std::string& path,
                            size_t max_bytes, std::string* text, bool* exists) {
  text->clear();
  if (exists != nullptr) *exists = false;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return Errno(what, "file", path, errno);
  }
  if (exists != nullptr) *exists = true;
  char buffer[65536];
  absl::Status status;
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = Errno(what, "file", path, errno);
      break;
    }
    if (n == 0) break;
    text->append(buffer, static_cast<size_t>(n));
    if (text->size() > max_bytes) {
      status = absl::DataLossError(absl::StrCat(
          what, " file ", path, ": larger than ", max_bytes, " bytes"));
      break;
    }
  }
  close(fd);
  return status;
}

absl::Status WriteSharedFile(const std::string& what, const std::string& path,
                             const std::string& text) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd =
      open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(what, "file", tmp, errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return Errno(what, "file", tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return Errno(what, "file", path, err);
  }
  return absl::OkStatus();
}

absl::Status WithSharedFileLock(const std::string& what,
                                const std::string& path,
                                absl::FunctionRef<absl::Status()> change) {
  const std::string lock_path = absl::StrCat(path, ".lock");
  const int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) return Errno(what, "lock", lock_path, errno);
  while (flock(lock, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    close(lock);
    return Errno(what, "lock", lock_path, err);
  }
  absl::Status status = change();
  close(lock);  // releases the flock
  return status;
}

}  // namespace gdp::fake_nvml
