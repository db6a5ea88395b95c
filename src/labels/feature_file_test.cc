#include "labels/feature_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "testing/temp_dir.h"
#include "util/file_watcher.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class FeatureFileTest : public ::testing::Test {
 protected:
  static std::string Read(const fs::path& path) {
    return ReadFileOrEmpty(path.string());
  }
  const gdp::testing::TempDir tmp_{"features"};
  const fs::path dir_ = tmp_.path() / "d";
};

TEST_F(FeatureFileTest, FormatIsSortedNameValueLines) {
  Labels labels = {{"nvidia.com/gpu.product", "Tesla-T4"},
                   {"nvidia.com/gpu.count", "2"},
                   {"nvidia.com/gpu.sharing-strategy", ""}};
  EXPECT_EQ(FormatFeatureFile(labels),
            "nvidia.com/gpu.count=2\n"
            "nvidia.com/gpu.product=Tesla-T4\n"
            "nvidia.com/gpu.sharing-strategy=\n");
  EXPECT_EQ(FormatFeatureFile({}), "");
}

TEST_F(FeatureFileTest, CreatesTheDirectoryAndLeavesNoTemporaryFile) {
  const fs::path path = dir_ / "features.d/gfd";
  ASSERT_TRUE(WriteFeatureFile(path.string(), {{"a", "1"}}).ok());
  EXPECT_EQ(Read(path), "a=1\n");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  ASSERT_TRUE(WriteFeatureFile(path.string(), {{"b", "2"}}).ok());
  EXPECT_EQ(Read(path), "b=2\n");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "features.d")) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  ASSERT_TRUE(RemoveFeatureFile(path.string()).ok());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(RemoveFeatureFile(path.string()).ok());  // already gone
}

TEST_F(FeatureFileTest, ErrorsNameThePath) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  const std::string under_file = (dir_ / "file/gfd").string();
  absl::Status s = WriteFeatureFile(under_file, {{"a", "1"}});
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(under_file));

  fs::create_directories(dir_ / "ro");
  fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  if (geteuid() != 0) {  // root writes anyway
    s = WriteFeatureFile((dir_ / "ro/gfd").string(), {{"a", "1"}});
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
    EXPECT_THAT(s.message(), HasSubstr((dir_ / "ro").string()));
  }
  fs::permissions(dir_ / "ro", fs::perms::owner_all);
  EXPECT_EQ(WriteFeatureFile(dir_.string() + "/", {}).code(),
            absl::StatusCode::kInvalidArgument);
}

// A reader polling the file while it is rewritten sees only whole files.
TEST_F(FeatureFileTest, ReaderNeverSeesAPartialFile) {
  Labels small = {{"nvidia.com/gpu.count", "1"}};
  Labels large;
  for (int i = 0; i < 1500; ++i) {
    large[absl::StrCat("nvidia.com/label-", i)] = std::string(20, 'v');
  }
  const std::string small_text = FormatFeatureFile(small);
  const std::string large_text = FormatFeatureFile(large);
  const fs::path path = dir_ / "gfd";
  ASSERT_TRUE(WriteFeatureFile(path.string(), small).ok());

  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, bad{0};
  std::thread reader([&] {
    while (!done.load()) {
      std::string text = Read(path);
      if (text != small_text && text != large_text) ++bad;
      ++reads;
    }
  });
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(WriteFeatureFile(path.string(), i % 2 ? small : large).ok());
  }
  done = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_GT(reads.load(), 10);
}

}  // namespace
}  // namespace gdp
