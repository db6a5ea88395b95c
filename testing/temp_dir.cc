#include "testing/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

namespace gdp::testing {

TempDir::TempDir(const std::string& tag) {
  std::error_code error;
  const std::filesystem::path base =
      std::filesystem::temp_directory_path(error);
  std::string pattern = ((error ? std::filesystem::path("/tmp") : base) /
                         ("gdp-" + tag + "-XXXXXX"))
                            .string();
  if (mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "TempDir: mkdtemp %s: %s\n", pattern.c_str(),
                 std::strerror(errno));
    abort();
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace gdp::testing
