// A fresh temporary directory for a test, removed with its contents when the
// test is done with it.
#ifndef GDP_TESTING_TEMP_DIR_H_
#define GDP_TESTING_TEMP_DIR_H_

#include <filesystem>
#include <string>

namespace gdp::testing {

// Makes <temp>/gdp-<tag>-XXXXXX with mkdtemp, where <temp> is
// std::filesystem::temp_directory_path() ($TMPDIR, else /tmp): a name no
// other TempDir of any process has while it exists, short enough for unix
// sockets under a short $TMPDIR. Aborts the test binary when the directory
// cannot be made. The destructor removes the directory and everything in
// it, ignoring errors. Not thread-safe; the path never changes.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The directory (absolute when $TMPDIR is).
  const std::filesystem::path& path() const { return path_; }
  // path() / name, as a string.
  std::string File(const std::string& name) const {
    return (path_ / name).string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace gdp::testing

#endif  // GDP_TESTING_TEMP_DIR_H_
