#include "labels/feature_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace gdp {
namespace {

constexpr mode_t kMode = 0644;

absl::Status Errno(int err, const std::string& what) {
  return absl::ErrnoToStatus(err, what);
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

}  // namespace

std::string FormatFeatureFile(const Labels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    absl::StrAppend(&out, name, "=", value, "\n");
  }
  return out;
}

absl::Status WriteFeatureFile(const std::string& path, const Labels& labels) {
  const std::filesystem::path target(path);
  if (!target.has_filename()) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature file '", path, "' names no file"));
  }
  const std::string dir =
      target.has_parent_path() ? target.parent_path().string() : ".";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Errno(ec.value(), absl::StrCat("creating the directory ", dir,
                                          " of the feature file ", path));
  }
  std::string tmp =
      absl::StrCat(dir, "/.", target.filename().string(), ".XXXXXX");
  int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    return Errno(errno, absl::StrCat("creating a temporary file in ", dir,
                                     " for ", path));
  }
  absl::Status s = WriteAll(fd, FormatFeatureFile(labels), tmp);
  if (s.ok() && fchmod(fd, kMode) != 0) {
    s = Errno(errno, absl::StrCat("setting the mode of ", tmp));
  }
  if (s.ok() && fsync(fd) != 0) s = Errno(errno, absl::StrCat("syncing ", tmp));
  if (close(fd) != 0 && s.ok()) {
    s = Errno(errno, absl::StrCat("closing ", tmp));
  }
  if (s.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    s = Errno(errno, absl::StrCat("renaming ", tmp, " to ", path));
  }
  if (!s.ok()) {
    unlink(tmp.c_str());
    return s;
  }
  return SyncDir(dir);
}

absl::Status RemoveFeatureFile(const std::string& path) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Errno(errno, absl::StrCat("removing ", path));
  }
  return absl::OkStatus();
}

}  // namespace gdp
