#include "cdi/write_spec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "cdi/root_path.h"
#include "cdi/spec.h"
#include "util/logging.h"

namespace gdp::cdi {
namespace {

constexpr mode_t kMode = 0644;

absl::Status Errno(int err, const std::string& what) {
  return absl::ErrnoToStatus(err, what);
}

// True if `path` is a regular file with exactly `content` and mode kMode.
bool AlreadyWritten(const std::string& path, const std::string& content) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      (st.st_mode & 07777) != kMode ||
      static_cast<size_t>(st.st_size) != content.size()) {
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream have;
  have << in.rdbuf();
  return in.good() && have.str() == content;
}

absl::Status WriteAll(int fd, const std::string& content,
                      const std::string& path) {
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(errno, absl::StrCat("writing ", path));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status SyncDir(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno(errno, absl::StrCat("opening ", dir));
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return Errno(err, absl::StrCat("syncing ", dir));
  return absl::OkStatus();
}

// Writes `content` to a new temporary file beside `target` and renames it
// over `target`.
absl::Status ReplaceFile(const std::string& dir, const std::string& target,
                         const std::string& content) {
  std::string tmp =
      JoinRoot(dir, absl::StrCat("/.", SpecFileName(), ".XXXXXX"));
  int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    return Errno(errno, absl::StrCat("creating a temporary file in ", dir));
  }
  absl::Status s = WriteAll(fd, content, tmp);
  if (s.ok() && fchmod(fd, kMode) != 0) {
    s = Errno(errno, absl::StrCat("setting the mode of ", tmp));
  }
  if (s.ok() && fsync(fd) != 0) s = Errno(errno, absl::StrCat("syncing ", tmp));
  if (close(fd) != 0 && s.ok()) {
    s = Errno(errno, absl::StrCat("closing ", tmp));
  }
  if (s.ok() && rename(tmp.c_str(), target.c_str()) != 0) {
    s = Errno(errno, absl::StrCat("renaming ", tmp, " to ", target));
  }
  if (!s.ok()) {
    unlink(tmp.c_str());
    return s;
  }
  return SyncDir(dir);
}

}  // namespace

absl::Status WriteSpec(const std::string& dir, const nlohmann::json& spec) {
  if (dir.empty()) {
    return absl::InvalidArgumentError("no CDI spec directory given");
  }
  std::string content;
  try {
    content = spec.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {  // invalid UTF-8
    return absl::InvalidArgumentError(
        absl::StrCat("CDI spec cannot be written as JSON: ", e.what()));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Errno(ec.value(), absl::StrCat("creating the CDI directory ", dir));
  }
  const std::string target = JoinRoot(dir, absl::StrCat("/", SpecFileName()));
  if (AlreadyWritten(target, content)) {
    VLOG(2, "CDI spec {} is unchanged", target);
    return absl::OkStatus();
  }
  if (absl::Status s = ReplaceFile(dir, target, content); !s.ok()) return s;
  VLOG(1, "wrote CDI spec {} ({} bytes)", target, content.size());
  return absl::OkStatus();
}

absl::Status RemoveSpec(const std::string& dir) {
  const std::string target = JoinRoot(dir, absl::StrCat("/", SpecFileName()));
  if (unlink(target.c_str()) != 0 && errno != ENOENT) {
    return Errno(errno, absl::StrCat("removing ", target));
  }
  return absl::OkStatus();
}

}  // namespace gdp::cdi
