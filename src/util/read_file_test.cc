#include "util/read_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/temp_dir.h"
#include "util/fifo_testing.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ReadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "small") << "hello";
    std::ofstream(dir_ / "big") << std::string(2000, 'x');
    fs::create_symlink(dir_ / "small", dir_ / "link");
    fs::create_directories(dir_ / "dir");
    ASSERT_EQ(mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  }
  std::string Path(const char* name) { return (dir_ / name).string(); }
  const gdp::testing::TempDir tmp_{"read-file"};
  const fs::path dir_ = tmp_.path();
};

TEST_F(ReadFileTest, RefusesWhatIsNotASmallRegularFile) {
  const struct {
    const char* path;  // under the test directory, or absolute
    ReadFileOptions options;
    absl::StatusCode code;
    const char* message;  // a part of the error, or the content
    bool too_large = false;
    bool not_regular = false;
  } cases[] = {
      {"small", {.max_bytes = 5}, absl::StatusCode::kOk, "hello"},
      {"link", {.max_bytes = 100}, absl::StatusCode::kOk, "hello"},
      {"link",
       {.max_bytes = 100, .follow_symlinks = false},
       absl::StatusCode::kFailedPrecondition,
       "is not a regular file (a symlink)",
       false,
       true},
      {"missing", {}, absl::StatusCode::kNotFound, "cannot read"},
      {"big",
       {.max_bytes = 1999},
       absl::StatusCode::kResourceExhausted,
       "big is larger than 1999 bytes",
       true},
      {"fifo",
       {},
       absl::StatusCode::kFailedPrecondition,
       "fifo is not a regular file (a FIFO)",
       false,
       true},
      {"dir",
       {},
       absl::StatusCode::kFailedPrecondition,
       "is not a regular file (a directory)",
       false,
       true},
      {"/dev/zero",
       {},
       absl::StatusCode::kFailedPrecondition,
       "/dev/zero is not a regular file (a character device)",
       false,
       true},
      // /proc files read as size 0: read, but no further than the bound.
      {"/proc/self/status",
       {.max_bytes = 10},
       absl::StatusCode::kResourceExhausted,
       "larger than 10 bytes",
       true},
  };
  for (const auto& c : cases) {
    const std::string path = c.path[0] == '/' ? c.path : Path(c.path);
    SCOPED_TRACE(path);
    absl::StatusOr<std::string> got = ReadRegularFile(path, c.options);
    EXPECT_EQ(got.status().code(), c.code) << got.status();
    if (got.ok()) {
      EXPECT_EQ(*got, c.message);
      continue;
    }
    EXPECT_THAT(got.status().message(), HasSubstr(c.message));
    EXPECT_EQ(IsFileTooLarge(got.status()), c.too_large);
    EXPECT_EQ(IsNotRegularFile(got.status()), c.not_regular);
  }
  // An errno status of the same code is neither.
  EXPECT_FALSE(IsFileTooLarge(absl::ResourceExhaustedError("EMFILE")));
  EXPECT_FALSE(IsNotRegularFile(absl::FailedPreconditionError("x")));
}

TEST_F(ReadFileTest, AFifoDoesNotBlock) {
  absl::StatusOr<std::string> got;
  EXPECT_TRUE(testing::ReturnsWithFifoInPlace(
      Path("new-fifo"), [&] { got = ReadRegularFile(Path("new-fifo"), {}); }));
  EXPECT_TRUE(IsNotRegularFile(got.status())) << got.status();
}

}  // namespace
}  // namespace gdp
