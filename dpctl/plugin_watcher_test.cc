#include "plugin_watcher.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_support.h"
#include "testing/fake_dra_plugin.h"

namespace gdp::dpctl {
namespace {

using ::gdp::dpctl::testing::RecordingSink;
using ::gdp::dpctl::testing::TempDir;
using ::gdp::testing::MakeSocketFile;

namespace fs = std::filesystem;

// Records the watcher's reports as {"event":"created"|"removed","path":..}.
class Recorder : public PluginWatcher::Handler {
 public:
  void SocketCreated(const std::string& path) override {
    sink.Emit({{"event", "created"}, {"path", path}});
  }
  void SocketRemoved(const std::string& path) override {
    sink.Emit({{"event", "removed"}, {"path", path}});
  }

  // Waits for the report `kind` of `path`; true when it came.
  bool Wait(const std::string& kind, const std::string& path) {
    return !sink.WaitFor(
                    [&](const Json& e) {
                      return e["event"] == kind && e["path"] == path;
                    },
                    absl::Seconds(20))
                .is_null();
  }
  // Every report so far, as "created <path>" / "removed <path>".
  std::vector<std::string> Reports() {
    std::vector<std::string> reports;
    for (const char* kind : {"created", "removed"}) {
      for (const Json& e : sink.Events(kind)) {
        reports.push_back(std::string(kind) + " " +
                          e["path"].get<std::string>());
      }
    }
    return reports;
  }

  RecordingSink sink;
};

void WriteFile(const std::string& path) { std::ofstream(path) << "x"; }

TEST(PluginWatcherTest, SocketsPresentAtStartCountAsCreated) {
  TempDir dir;
  ASSERT_TRUE(MakeSocketFile(dir.File("a-reg.sock")));
  ASSERT_TRUE(MakeSocketFile(dir.File(".hidden-reg.sock")));
  WriteFile(dir.File("regular"));
  fs::create_directory(dir.File("sub"));
  ASSERT_TRUE(MakeSocketFile(dir.File("sub/b-reg.sock")));
  fs::create_directory(dir.File(".dot"));
  ASSERT_TRUE(MakeSocketFile(dir.File(".dot/c-reg.sock")));

  Recorder recorder;
  PluginWatcher watcher(dir.path().string() + "/", &recorder);
  ASSERT_TRUE(watcher.Init().ok());
  watcher.Start();
  ASSERT_TRUE(recorder.Wait("created", dir.File("a-reg.sock")));
  ASSERT_TRUE(recorder.Wait("created", dir.File("sub/b-reg.sock")));
  // A later socket is reported after anything the walk found.
  ASSERT_TRUE(MakeSocketFile(dir.File("sentinel.sock")));
  ASSERT_TRUE(recorder.Wait("created", dir.File("sentinel.sock")));
  watcher.Stop();
  EXPECT_EQ(recorder.Reports().size(), 3u)
      << ::testing::PrintToString(recorder.Reports());
}

TEST(PluginWatcherTest, FollowsCreationAndRemoval) {
  TempDir dir;
  const std::string registry = dir.File("plugins_registry");
  Recorder recorder;
  PluginWatcher watcher(registry, &recorder);
  ASSERT_TRUE(watcher.Init().ok());
  EXPECT_TRUE(fs::is_directory(registry));
  watcher.Start();

  const std::string socket = registry + "/gpu-reg.sock";
  ASSERT_TRUE(MakeSocketFile(socket));
  ASSERT_TRUE(recorder.Wait("created", socket));
  // Ignored: a dotfile socket, a regular file, and their removal.
  ASSERT_TRUE(MakeSocketFile(registry + "/.gpu-reg.sock"));
  WriteFile(registry + "/notes.txt");
  fs::remove(registry + "/notes.txt");
  fs::remove(registry + "/.gpu-reg.sock");
  fs::remove(socket);
  ASSERT_TRUE(recorder.Wait("removed", socket));
  // Created again after its removal: reported again.
  ASSERT_TRUE(MakeSocketFile(socket));
  ASSERT_TRUE(recorder.Wait("created", socket));
  // A new subdirectory and a socket in it.
  fs::create_directory(registry + "/sub");
  ASSERT_TRUE(MakeSocketFile(registry + "/sub/x.sock"));
  ASSERT_TRUE(recorder.Wait("created", registry + "/sub/x.sock"));
  // Renamed into place: created under the new name, removed under the old.
  fs::rename(registry + "/sub/x.sock", registry + "/y.sock");
  ASSERT_TRUE(recorder.Wait("removed", registry + "/sub/x.sock"));
  ASSERT_TRUE(recorder.Wait("created", registry + "/y.sock"));
  watcher.Stop();
  EXPECT_EQ(recorder.sink.Events("created").size(), 4u)
      << ::testing::PrintToString(recorder.Reports());
  EXPECT_EQ(recorder.sink.Events("removed").size(), 2u)
      << ::testing::PrintToString(recorder.Reports());
}

TEST(PluginWatcherTest, InitFailsOnAFile) {
  TempDir dir;
  WriteFile(dir.File("file"));
  Recorder recorder;
  PluginWatcher watcher(dir.File("file") + "/registry", &recorder);
  absl::Status status = watcher.Init();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("cannot create"), absl::string_view::npos)
      << status;
}

}  // namespace
}  // namespace gdp::dpctl
