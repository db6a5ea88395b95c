#include "cdi/write_spec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "cdi/spec.h"
#include "testing/temp_dir.h"

namespace gdp::cdi {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json SpecWith(int devices) {
  json devs = json::array();
  for (int i = 0; i < devices; ++i) {
    devs.push_back(
        {{"name", std::to_string(i)},
         {"containerEdits",
          {{"deviceNodes", {{{"path", "/dev/nvidia" + std::to_string(i)}}}}}}});
  }
  return {{"cdiVersion", kCdiVersion}, {"kind", kKind}, {"devices", devs}};
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class WriteSpecTest : public ::testing::Test {
 protected:
  void SetUp() override { target_ = dir_ / "cdi" / SpecFileName(); }

  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_ / "cdi")) {
      out.push_back(e.path().filename().string());
    }
    return out;
  }

  const gdp::testing::TempDir tmp_{"cdi-write"};
  const fs::path dir_ = tmp_.path();
  fs::path target_;
};

TEST_F(WriteSpecTest, CreatesTheDirectoryAndWritesTheSpec) {
  json spec = SpecWith(2);
  ASSERT_TRUE(WriteSpec((dir_ / "cdi").string(), spec).ok());
  EXPECT_EQ(json::parse(Slurp(target_)), spec);
  EXPECT_EQ(Slurp(target_).back(), '\n');
  struct stat st;
  ASSERT_EQ(stat(target_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(Entries(), std::vector<std::string>{SpecFileName()});
}

TEST_F(WriteSpecTest, LeavesAnUnchangedSpecAlone) {
  ASSERT_TRUE(WriteSpec((dir_ / "cdi").string(), SpecWith(2)).ok());
  struct stat before, after;
  ASSERT_EQ(stat(target_.c_str(), &before), 0);
  ASSERT_TRUE(WriteSpec((dir_ / "cdi").string(), SpecWith(2)).ok());
  ASSERT_EQ(stat(target_.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // no rename happened

  ASSERT_TRUE(WriteSpec((dir_ / "cdi").string(), SpecWith(3)).ok());
  ASSERT_EQ(stat(target_.c_str(), &after), 0);
  EXPECT_NE(before.st_ino, after.st_ino);
  EXPECT_EQ(json::parse(Slurp(target_)), SpecWith(3));

  // A wrong mode is repaired even if the content is the same.
  fs::permissions(target_, fs::perms(0600));
  ASSERT_TRUE(WriteSpec((dir_ / "cdi").string(), SpecWith(3)).ok());
  ASSERT_EQ(stat(target_.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, 0644u);
  EXPECT_EQ(Entries(), std::vector<std::string>{SpecFileName()});
}

TEST_F(WriteSpecTest, ErrorsNameThePath) {
  std::ofstream(dir_ / "file") << "x";
  absl::Status s = WriteSpec((dir_ / "file").string(), SpecWith(1));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find((dir_ / "file").string()), std::string::npos) << s;

  // A directory in the way of the target: the rename fails, nothing is left.
  fs::create_directories(target_ / "sub");
  s = WriteSpec((dir_ / "cdi").string(), SpecWith(1));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(target_.string()), std::string::npos) << s;
  EXPECT_EQ(Entries(), std::vector<std::string>{SpecFileName()});

  EXPECT_EQ(WriteSpec("", SpecWith(1)).code(),
            absl::StatusCode::kInvalidArgument);
  json bad = SpecWith(1);
  bad["devices"][0]["name"] = std::string("\xff\xfe");
  EXPECT_EQ(WriteSpec((dir_ / "other").string(), bad).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(WriteSpecTest, UnwritableDirectory) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores directory modes";
  fs::create_directories(dir_ / "cdi");
  fs::permissions(dir_ / "cdi", fs::perms(0555));
  absl::Status s = WriteSpec((dir_ / "cdi").string(), SpecWith(1));
  fs::permissions(dir_ / "cdi", fs::perms(0755));
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find((dir_ / "cdi").string()), std::string::npos) << s;
}

// A reader polling the spec while it is rewritten many times (with contents
// of different sizes) only ever sees a complete spec, and never a missing one.
TEST_F(WriteSpecTest, ReadersNeverSeeAPartialSpec) {
  const std::string dir = (dir_ / "cdi").string();
  const json small = SpecWith(1);
  const json big = SpecWith(2000);
  ASSERT_TRUE(WriteSpec(dir, small).ok());

  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, bad{0};
  std::thread reader([&] {
    while (!done.load()) {
      std::ifstream in(target_, std::ios::binary);
      if (!in) {
        bad++;
        continue;
      }
      std::ostringstream s;
      s << in.rdbuf();
      json got = json::parse(s.str(), nullptr, /*allow_exceptions=*/false);
      // A discarded (unparsable) value is neither == nor != anything.
      if (got.is_discarded() || (got != small && got != big)) bad++;
      reads++;
    }
  });
  for (int i = 0; i < 400; ++i) {
    ASSERT_TRUE(WriteSpec(dir, i % 2 == 0 ? big : small).ok());
  }
  // Let the reader see the last state too.
  while (reads.load() < 50) std::this_thread::yield();
  done = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_EQ(Entries(), std::vector<std::string>{SpecFileName()});
}

TEST_F(WriteSpecTest, OtherFileNames) {
  const std::string dir = (dir_ / "cdi").string();
  ASSERT_TRUE(WriteSpec(dir, "a_claim.json", SpecWith(1)).ok());
  ASSERT_TRUE(WriteSpec(dir, SpecWith(2)).ok());
  EXPECT_EQ(Entries().size(), 2u);
  EXPECT_TRUE(RemoveSpec(dir, "a_claim.json").ok());
  EXPECT_TRUE(RemoveSpec(dir, "a_claim.json").ok());  // already gone
  EXPECT_EQ(Entries(), std::vector<std::string>{SpecFileName()});
}

// The reproduction of issue 23: a claim UID "a/../../target/victim" made
// RemoveSpec delete target/victim.json outside the CDI directory. A file
// name is one path component, never "." or "..".
TEST_F(WriteSpecTest, FileNamesThatLeaveTheDirectoryAreRefused) {
  const std::string dir = (dir_ / "cdi").string();
  fs::create_directories(dir_ / "cdi" / "k8s.gpu.nvidia.com-claim_a");
  fs::create_directories(dir_ / "target");
  std::ofstream(dir_ / "target" / "victim.json") << "{}";
  const std::string names[] = {
      "k8s.gpu.nvidia.com-claim_a/../../target/victim.json",
      "../x.json",
      "a/b.json",
      "..",
      ".",
      "",
      std::string("a\0b.json", 8)};
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    absl::Status removed = RemoveSpec(dir, name);
    EXPECT_EQ(removed.code(), absl::StatusCode::kInvalidArgument) << removed;
    absl::Status written = WriteSpec(dir, name, SpecWith(1));
    EXPECT_EQ(written.code(), absl::StatusCode::kInvalidArgument) << written;
  }
  EXPECT_TRUE(fs::exists(dir_ / "target" / "victim.json"));
}

TEST_F(WriteSpecTest, TheDirectoryIsNotWorldWritableWhateverTheUmask) {
  const mode_t old = umask(0);
  absl::Status written =
      WriteSpec((dir_ / "run" / "cdi").string(), SpecWith(1));
  umask(old);
  ASSERT_TRUE(written.ok()) << written;
  for (const fs::path& d : {dir_ / "run", dir_ / "run" / "cdi"}) {
    struct stat st;
    ASSERT_EQ(stat(d.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0755u) << d;
  }
}

TEST_F(WriteSpecTest, RemoveSpec) {
  ASSERT_TRUE(WriteSpec((dir_ / "cdi").string(), SpecWith(1)).ok());
  EXPECT_TRUE(RemoveSpec((dir_ / "cdi").string()).ok());
  EXPECT_FALSE(fs::exists(target_));
  EXPECT_TRUE(RemoveSpec((dir_ / "cdi").string()).ok());  // already gone
  EXPECT_TRUE(RemoveSpec((dir_ / "none").string()).ok());
}

}  // namespace
}  // namespace gdp::cdi
