#include "cdi/write_spec.h"

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "cdi/root_path.h"
#include "cdi/spec.h"
#include "util/atomic_file.h"
#include "util/logging.h"
#include "util/make_dirs.h"
#include "util/quote.h"
#include "util/read_file.h"

namespace gdp::cdi {
namespace {

constexpr mode_t kMode = 0644;

// True if `path` is a regular file with exactly `content` and mode kMode.
bool AlreadyWritten(const std::string& path, const std::string& content) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      (st.st_mode & 07777) != kMode ||
      static_cast<size_t>(st.st_size) != content.size()) {
    return false;
  }
  absl::StatusOr<std::string> have = ReadRegularFile(
      path, {.max_bytes = content.size(), .follow_symlinks = false});
  return have.ok() && *have == content;
}

// OK if `file_name` names a file in the spec directory: one path component,
// not "." or "..", no NUL. A claim's UID is part of its spec's name: one
// with a '/' must never reach outside the directory (defence in depth
// behind the UID check at the gRPC edge).
absl::Status CheckFileName(const std::string& file_name) {
  if (file_name.empty() || file_name == "." || file_name == ".." ||
      file_name.find_first_of(std::string("/\0", 2)) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("CDI spec file name ", Quote(file_name),
                     " is not a file name in the CDI directory"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteSpec(const std::string& dir, const nlohmann::json& spec) {
  return WriteSpec(dir, SpecFileName(), spec);
}

absl::Status WriteSpec(const std::string& dir, const std::string& file_name,
                       const nlohmann::json& spec) {
  if (dir.empty()) {
    return absl::InvalidArgumentError("no CDI spec directory given");
  }
  if (absl::Status s = CheckFileName(file_name); !s.ok()) return s;
  std::string content;
  try {
    content = spec.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {  // invalid UTF-8
    return absl::InvalidArgumentError(
        absl::StrCat("CDI spec cannot be written as JSON: ", e.what()));
  }
  // Never world-writable, whatever the umask: whoever can write here can
  // give any container any device.
  if (absl::Status s = MakeDirs(dir, kPublicDirMode); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("CDI directory: ", s.message()));
  }
  const std::string target = JoinRoot(dir, absl::StrCat("/", file_name));
  if (AlreadyWritten(target, content)) {
    VLOG(2, "CDI spec {} is unchanged", target);
    return absl::OkStatus();
  }
  if (absl::Status s = WriteFileAtomically(target, content, kMode); !s.ok()) {
    return s;
  }
  VLOG(1, "wrote CDI spec {} ({} bytes)", target, content.size());
  return absl::OkStatus();
}

absl::Status RemoveSpec(const std::string& dir) {
  return RemoveSpec(dir, SpecFileName());
}

absl::Status RemoveSpec(const std::string& dir, const std::string& file_name) {
  if (absl::Status s = CheckFileName(file_name); !s.ok()) return s;
  return RemoveFile(JoinRoot(dir, absl::StrCat("/", file_name)));
}

}  // namespace gdp::cdi
