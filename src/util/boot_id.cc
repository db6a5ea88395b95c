#include "util/boot_id.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "util/logging.h"
#include "util/read_file.h"

namespace gdp {

std::string ReadBootId(const std::string& proc_root) {
  const std::string path =
      absl::StrCat(proc_root, "/sys/kernel/random/boot_id");
  // A /proc file (regular, size 0): 37 bytes.
  absl::StatusOr<std::string> text = ReadRegularFile(path, {.max_bytes = 4096});
  if (!text.ok()) {
    LOG_WARN("Cannot read the boot ID: {}", text.status().message());
    return "";
  }
  std::string id(absl::StripAsciiWhitespace(*text));
  if (id.empty()) LOG_WARN("Cannot read the boot ID: {} is empty", path);
  return id;
}

}  // namespace gdp
