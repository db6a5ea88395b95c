// Identity of a file at a path: inode and change time, so a file deleted and
// recreated under the same name (even with a reused inode number) differs.
#ifndef GDP_UTIL_FILE_ID_H_
#define GDP_UTIL_FILE_ID_H_

#include <sys/stat.h>

#include <optional>
#include <string>

namespace gdp {

struct FileId {
  ino_t ino;
  long ctime_sec;
  long ctime_nsec;
  bool operator==(const FileId&) const = default;
};

// The identity of the file at `path` (not following a final symlink), or
// nullopt if there is none.
inline std::optional<FileId> GetFileId(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_ino, static_cast<long>(st.st_ctim.tv_sec),
                static_cast<long>(st.st_ctim.tv_nsec)};
}

}  // namespace gdp

#endif  // GDP_UTIL_FILE_ID_H_
