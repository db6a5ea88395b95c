#include "kube/files.h"

#include "util/read_file.h"

namespace gdp::kube {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          size_t max_bytes) {
  return ReadRegularFile(path,
                         {.max_bytes = max_bytes, .follow_symlinks = true});
}

}  // namespace gdp::kube
