#include "util/file_watcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "testing/temp_dir.h"
#include "util/fifo_testing.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

class FileWatcherTest : public ::testing::Test {
 protected:
  const gdp::testing::TempDir tmp_{"fw"};
  const fs::path dir_ = tmp_.path();
};

TEST_F(FileWatcherTest, AFifoInPlaceOfTheFileDoesNotBlock) {
  const std::string fifo = (dir_ / "config.yaml").string();
  std::string got = "x";
  EXPECT_TRUE(testing::ReturnsWithFifoInPlace(
      fifo, [&] { got = ReadFileOrEmpty(fifo); }));
  EXPECT_EQ(got, "");
  std::unique_ptr<FileWatcher> w;
  fs::remove(fifo);
  EXPECT_TRUE(testing::ReturnsWithFifoInPlace(fifo, [&] {
    auto created = FileWatcher::Create(fifo);
    if (created.ok()) w = std::move(*created);
  }));
  EXPECT_NE(w, nullptr);
}

TEST_F(FileWatcherTest, InPlaceWriteAndRename) {
  Write(dir_ / "config.yaml", "a");
  auto w = FileWatcher::Create((dir_ / "config.yaml").string());
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->Wait(absl::Milliseconds(50)), FileWatcher::Event::kNone);

  Write(dir_ / "config.yaml", "b");
  EXPECT_EQ((*w)->Wait(absl::Seconds(5)), FileWatcher::Event::kChanged);

  Write(dir_ / "other", "x");  // another file: no change
  EXPECT_EQ((*w)->Wait(absl::Seconds(5)), FileWatcher::Event::kNone);

  Write(dir_ / ".tmp", "c");
  fs::rename(dir_ / ".tmp", dir_ / "config.yaml");
  EXPECT_EQ((*w)->Wait(absl::Seconds(5)), FileWatcher::Event::kChanged);

  Write(dir_ / "config.yaml", "c");  // same content: no change
  EXPECT_EQ((*w)->Wait(absl::Seconds(5)), FileWatcher::Event::kNone);
}

TEST_F(FileWatcherTest, ConfigMapSymlinkSwap) {
  // What the kubelet does for a ConfigMap volume.
  fs::create_directories(dir_ / "..v1");
  Write(dir_ / "..v1" / "config.yaml", "one");
  fs::create_directory_symlink("..v1", dir_ / "..data");
  fs::create_symlink("..data/config.yaml", dir_ / "config.yaml");
  auto w = FileWatcher::Create((dir_ / "config.yaml").string());
  ASSERT_TRUE(w.ok());

  fs::create_directories(dir_ / "..v2");
  Write(dir_ / "..v2" / "config.yaml", "two");
  fs::create_directory_symlink("..v2", dir_ / "..data_tmp");
  fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  EXPECT_EQ((*w)->Wait(absl::Seconds(5)), FileWatcher::Event::kChanged);
}

TEST_F(FileWatcherTest, WakeEndsWaitWithAndWithoutPath) {
  Write(dir_ / "f", "a");
  for (std::string path : {(dir_ / "f").string(), std::string()}) {
    auto w = FileWatcher::Create(path);
    ASSERT_TRUE(w.ok());
    std::thread t([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      (*w)->Wake();
    });
    EXPECT_EQ((*w)->Wait(absl::InfiniteDuration()), FileWatcher::Event::kNone);
    t.join();
  }
}

// Another file written every 20 ms keeps the directory from going quiet:
// a change is still seen within the settling bound, and Wake (a SIGTERM)
// ends the settling at once.
TEST_F(FileWatcherTest, BusyDirectoryDelaysAChangeOnlyBoundedly) {
  Write(dir_ / "config.yaml", "a");
  auto w = FileWatcher::Create((dir_ / "config.yaml").string());
  ASSERT_TRUE(w.ok()) << w.status();
  std::atomic<bool> busy{true};
  std::thread writer([&] {
    for (int i = 0; busy.load(); ++i) {
      Write(dir_ / "other", std::to_string(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  Write(dir_ / "config.yaml", "b");
  absl::Time start = absl::Now();
  FileWatcher::Event e = FileWatcher::Event::kNone;
  while (e != FileWatcher::Event::kChanged &&
         absl::Now() - start < absl::Seconds(30)) {
    e = (*w)->Wait(absl::Seconds(30));
  }
  EXPECT_EQ(e, FileWatcher::Event::kChanged);
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));

  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    (*w)->Wake();
  });
  start = absl::Now();
  (*w)->Wait(absl::Seconds(60));
  // Settling is cut short by the wake (or ends by its own bound).
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  waker.join();
  busy = false;
  writer.join();
}

}  // namespace
}  // namespace gdp
