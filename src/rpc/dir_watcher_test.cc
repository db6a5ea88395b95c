#include "rpc/dir_watcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/temp_dir.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;

class DirWatcherTest : public ::testing::Test {
 protected:
  DirWatcherTest() : dir_(root_ / "device-plugins") {
    fs::create_directories(dir_);
  }

  std::unique_ptr<DirWatcher> Watch() {
    auto w = DirWatcher::Create(dir_.string(), "kubelet.sock", "ours.sock");
    EXPECT_TRUE(w.ok()) << w.status();
    return *std::move(w);
  }

  // Waits until an event of `what` or 30 s.
  static bool WaitFor(DirWatcher& w, bool DirEvents::*what) {
    for (int i = 0; i < 30; ++i) {
      if (w.Wait(absl::Seconds(1)).*what) return true;
    }
    return false;
  }

  const gdp::testing::TempDir tmp_{"dw"};
  const fs::path root_ = tmp_.path();
  fs::path dir_;
};

TEST_F(DirWatcherTest, KubeletSocketCreatedAndOwnSocketRemoved) {
  std::ofstream(dir_ / "ours.sock") << "";
  auto w = Watch();
  std::ofstream(dir_ / "kubelet.sock") << "";
  EXPECT_TRUE(WaitFor(*w, &DirEvents::kubelet_socket_created));
  fs::remove(dir_ / "ours.sock");
  EXPECT_TRUE(WaitFor(*w, &DirEvents::own_socket_removed));
  std::ofstream(dir_ / "other") << "";  // nothing that matters
  EXPECT_FALSE(w->Wait(absl::Milliseconds(200)).own_socket_removed);
}

TEST_F(DirWatcherTest, RemovedDirectoryIsRecreatedAndWatched) {
  auto w = Watch();
  fs::remove_all(dir_);
  EXPECT_TRUE(WaitFor(*w, &DirEvents::own_socket_removed));
  EXPECT_TRUE(fs::is_directory(dir_));
  std::ofstream(dir_ / "kubelet.sock") << "";
  EXPECT_TRUE(WaitFor(*w, &DirEvents::kubelet_socket_created));
}

// Under umask 000 the plugin, plugins and registry directories were 0777:
// any local user could register a plugin with the kubelet. Created, and
// created again after a removal, they are 0755 whatever the umask.
TEST_F(DirWatcherTest, CreatedDirectoriesAreNotWorldWritable) {
  auto mode = [](const fs::path& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  };
  const fs::path nested = root_ / "plugins" / "gpu.nvidia.com";
  const mode_t old = umask(0);
  auto w = DirWatcher::Create(nested.string(), "kubelet.sock", "ours.sock");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(mode(root_ / "plugins"), 0755u);
  EXPECT_EQ(mode(nested), 0755u);
  fs::remove_all(nested);
  EXPECT_TRUE(WaitFor(**w, &DirEvents::own_socket_removed));
  umask(old);
  EXPECT_EQ(mode(nested), 0755u);
}

// A directory removed while something holds it open reports no removal of
// its own: the new one at the same path is found through the parent.
TEST_F(DirWatcherTest, DirectoryReplacedWhileHeldOpenIsFollowed) {
  auto w = Watch();
  const int held = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  EXPECT_TRUE(WaitFor(*w, &DirEvents::own_socket_removed));
  std::ofstream(dir_ / "kubelet.sock") << "";
  EXPECT_TRUE(WaitFor(*w, &DirEvents::kubelet_socket_created));
  close(held);
}

}  // namespace
}  // namespace gdp
