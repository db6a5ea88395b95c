#include "device/mig_caps.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "util/read_file.h"

namespace gdp {
namespace {

constexpr char kMigMinors[] = "/driver/nvidia-caps/mig-minors";

// Consumes `prefix` and the decimal number after it from *text.
bool ConsumeNumber(absl::string_view* text, absl::string_view prefix,
                   unsigned* value) {
  if (!absl::ConsumePrefix(text, prefix)) return false;
  size_t digits = 0;
  while (digits < text->size() && absl::ascii_isdigit((*text)[digits])) {
    ++digits;
  }
  if (digits == 0 || !absl::SimpleAtoi(text->substr(0, digits), value)) {
    return false;
  }
  text->remove_prefix(digits);
  return true;
}

// "gpu<m>/gi<g>/access" or "gpu<m>/gi<g>/ci<c>/access": (m, g, c), with c
// `no_ci` for a GPU instance.
std::optional<std::tuple<unsigned, unsigned, unsigned>> ParseName(
    absl::string_view name, unsigned no_ci) {
  unsigned gpu = 0, gi = 0, ci = no_ci;
  if (!ConsumeNumber(&name, "gpu", &gpu) || !ConsumeNumber(&name, "/gi", &gi)) {
    return std::nullopt;
  }
  if (name != "/access") {
    if (!ConsumeNumber(&name, "/ci", &ci) || name != "/access" || ci == no_ci) {
      return std::nullopt;
    }
  }
  return std::tuple{gpu, gi, ci};
}

std::string CapName(unsigned gpu, unsigned gi, std::optional<unsigned> ci) {
  return ci.has_value()
             ? absl::StrCat("gpu", gpu, "/gi", gi, "/ci", *ci, "/access")
             : absl::StrCat("gpu", gpu, "/gi", gi, "/access");
}

}  // namespace

absl::StatusOr<MigCaps> MigCaps::Read(const std::string& proc_root) {
  const std::string path =
      absl::StrCat(absl::StripSuffix(proc_root, "/"), kMigMinors);
  // A /proc file: a few KiB (a line per GPU and MIG instance).
  absl::StatusOr<std::string> text = ReadRegularFile(
      path, {.max_bytes = 1 << 20, .what = "MIG capability minors"});
  if (!text.ok()) {
    return absl::Status(
        text.status().code(),
        absl::StrCat(text.status().message(),
                     " (is the NVIDIA driver loaded with MIG support, and "
                     "--proc-root right?)"));
  }
  return Parse(*text, path);
}

absl::StatusOr<MigCaps> MigCaps::Parse(absl::string_view text,
                                       const std::string& path) {
  MigCaps caps(path);
  absl::flat_hash_map<std::string, int> seen;  // name -> line
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    unsigned minor = 0;
    const bool numeric =
        fields.size() == 2 && !fields[1].empty() &&
        std::all_of(fields[1].begin(), fields[1].end(),
                    [](char c) { return absl::ascii_isdigit(c); }) &&
        absl::SimpleAtoi(fields[1], &minor);
    std::optional<std::tuple<unsigned, unsigned, unsigned>> key;
    const bool known_name =
        numeric && (fields[0] == "config" || fields[0] == "monitor" ||
                    (key = ParseName(fields[0], kGpuInstance)).has_value());
    if (!known_name) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_number, ": malformed line \"", line,
                       "\" (expected \"config <N>\", \"monitor <N>\", "
                       "\"gpu<minor>/gi<id>/access <N>\" or "
                       "\"gpu<minor>/gi<id>/ci<id>/access <N>\")"));
    }
    const auto [it, added] =
        seen.try_emplace(std::string(fields[0]), line_number);
    if (!added) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_number, ": ", fields[0],
                       " is listed twice (also on line ", it->second, ")"));
    }
    if (key.has_value()) caps.minors_.emplace(*key, minor);
  }
  return caps;
}

absl::StatusOr<unsigned> MigCaps::Find(const Key& key,
                                       const std::string& name) const {
  const auto it = minors_.find(key);
  if (it == minors_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no MIG capability ", name, " in ", path_));
  }
  return it->second;
}

absl::StatusOr<unsigned> MigCaps::GpuInstanceMinor(unsigned gpu_minor,
                                                   unsigned gi) const {
  return Find({gpu_minor, gi, kGpuInstance},
              CapName(gpu_minor, gi, std::nullopt));
}

absl::StatusOr<unsigned> MigCaps::ComputeInstanceMinor(unsigned gpu_minor,
                                                       unsigned gi,
                                                       unsigned ci) const {
  return Find({gpu_minor, gi, ci}, CapName(gpu_minor, gi, ci));
}

std::string MigCaps::DevicePath(unsigned cap_minor) {
  return absl::StrCat("/dev/nvidia-caps/nvidia-cap", cap_minor);
}

}  // namespace gdp
