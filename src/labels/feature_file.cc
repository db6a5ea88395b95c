#include "labels/feature_file.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "util/atomic_file.h"

namespace gdp {
namespace {

constexpr mode_t kMode = 0644;

}  // namespace

std::string FormatFeatureFile(const Labels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    absl::StrAppend(&out, name, "=", value, "\n");
  }
  return out;
}

absl::Status WriteFeatureFile(const std::string& path, const Labels& labels) {
  return WriteFileAtomically(path, FormatFeatureFile(labels), kMode);
}

absl::Status RemoveFeatureFile(const std::string& path) {
  return RemoveFile(path);
}

}  // namespace gdp
