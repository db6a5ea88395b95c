#include "util/make_dirs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/temp_dir.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

mode_t ModeOf(const fs::path& p) {
  struct stat st;
  if (stat(p.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

class MakeDirsTest : public ::testing::Test {
 protected:
  void SetUp() override { old_umask_ = umask(0); }
  void TearDown() override { umask(old_umask_); }
  const gdp::testing::TempDir tmp_{"make-dirs"};
  const fs::path dir_ = tmp_.path();
  mode_t old_umask_ = 0;
};

TEST_F(MakeDirsTest, NewDirectoriesGetTheModeWhateverTheUmask) {
  for (mode_t mask : {0000, 0022, 0077, 0777}) {
    for (mode_t mode : {kPublicDirMode, kPrivateDirMode}) {
      SCOPED_TRACE(::testing::Message()
                   << "umask " << std::oct << mask << " mode " << mode);
      umask(mask);
      const fs::path top =
          dir_ / ("m" + std::to_string(mask) + "-" + std::to_string(mode));
      ASSERT_TRUE(MakeDirs((top / "a" / "b/").string(), mode).ok());
      umask(0);
      EXPECT_EQ(ModeOf(top), mode);
      EXPECT_EQ(ModeOf(top / "a"), mode);
      EXPECT_EQ(ModeOf(top / "a" / "b"), mode);
    }
  }
}

TEST_F(MakeDirsTest, ExistingDirectoriesAreLeftAlone) {
  fs::create_directories(dir_ / "old");
  fs::permissions(dir_ / "old", fs::perms(0711));
  ASSERT_TRUE(MakeDirs((dir_ / "old" / "new").string(), 0700).ok());
  EXPECT_EQ(ModeOf(dir_ / "old"), 0711u);
  EXPECT_EQ(ModeOf(dir_ / "old" / "new"), 0700u);
  EXPECT_TRUE(MakeDirs((dir_ / "old").string(), 0700).ok());
  EXPECT_EQ(ModeOf(dir_ / "old"), 0711u);
}

TEST_F(MakeDirsTest, AFileInTheWayIsAnError) {
  std::ofstream(dir_ / "file") << "x";
  absl::Status s = MakeDirs((dir_ / "file" / "sub").string(), 0755);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find((dir_ / "file").string()), std::string::npos) << s;
  EXPECT_EQ(MakeDirs("", 0755).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gdp
