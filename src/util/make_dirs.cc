#include "util/make_dirs.h"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace gdp {

absl::Status MakeDirs(const std::string& dir, mode_t mode) {
  if (dir.empty()) return absl::InvalidArgumentError("no directory given");
  // The parents first, from the top down; lexically_normal drops "a/./b"
  // and trailing slashes, so every prefix is a directory to make.
  const std::filesystem::path target =
      std::filesystem::path(dir).lexically_normal();
  std::filesystem::path prefix;
  for (const std::filesystem::path& part : target) {
    prefix /= part;
    if (part.empty() || part == "/" || part == "." || part == "..") continue;
    const std::string path = prefix.string();
    if (mkdir(path.c_str(), mode) == 0) {
      if (chmod(path.c_str(), mode) != 0) {
        return absl::ErrnoToStatus(
            errno,
            absl::StrCat("setting the mode of the new directory ", path));
      }
      continue;
    }
    const int err = errno;
    struct stat st;
    if (err == EEXIST && stat(path.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot create the directory ", path, ": something else is there"));
    }
    return absl::ErrnoToStatus(
        err, absl::StrCat("cannot create the directory ", path));
  }
  return absl::OkStatus();
}

}  // namespace gdp
