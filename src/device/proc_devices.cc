#include "device/proc_devices.h"

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "util/read_file.h"

namespace gdp {
namespace {

constexpr size_t kMaxProcDevicesBytes = 64 << 10;
// Linux majors are 12 bits.
constexpr unsigned kMaxMajor = 4095;

}  // namespace

absl::StatusOr<unsigned> ParseCharDeviceMajor(absl::string_view text,
                                              absl::string_view name,
                                              const std::string& path) {
  bool in_char = false;
  std::optional<unsigned> found;
  unsigned line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (line.back() == ':') {
      in_char = line == "Character devices:";
      continue;
    }
    if (!in_char) continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    unsigned major = 0;
    if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &major) ||
        major > kMaxMajor) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_number, ": '", line,
          "' is not '<major> <name>' (a major up to ", kMaxMajor, ")"));
    }
    if (fields[1] != name) continue;
    if (found.has_value() && *found != major) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_number, ": ", name,
                       " listed with major ", major, " after major ", *found));
    }
    found = major;
  }
  if (!found.has_value()) {
    return absl::NotFoundError(absl::StrCat("no character device ", name,
                                            " in ", path,
                                            " (is the NVIDIA driver loaded?)"));
  }
  return *found;
}

absl::StatusOr<unsigned> ReadCharDeviceMajor(const std::string& proc_root,
                                             absl::string_view name) {
  const std::string path = proc_root + "/devices";
  absl::StatusOr<std::string> text =
      ReadRegularFile(path, ReadFileOptions{.max_bytes = kMaxProcDevicesBytes,
                                            .what = "the device majors"});
  if (!text.ok()) return text.status();
  return ParseCharDeviceMajor(*text, name, path);
}

}  // namespace gdp
