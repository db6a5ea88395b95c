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
#include "util/atomic_file.h"
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

}  // namespace

absl::Status WriteSpec(const std::string& dir, const nlohmann::json& spec) {
  return WriteSpec(dir, SpecFileName(), spec);
}

absl::Status WriteSpec(const std::string& dir, const std::string& file_name,
                       const nlohmann::json& spec) {
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
  return RemoveFile(JoinRoot(dir, absl::StrCat("/", file_name)));
}

}  // namespace gdp::cdi
