// HealthStateStore on temporary directories: load, save only on change,
// other boots, bad files moved aside, write failures, and clearing.
#include "health/state_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "health/state_file.h"
#include "testing/temp_dir.h"
#include "util/fifo_testing.h"
#include "util/logging.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

const GpuRef kGpu0{"GPU-aaaa", 0};
const GpuRef kGpu1{"GPU-bbbb", 1};
const absl::Time t0 = absl::FromUnixSeconds(1700000000);

HealthEvent Xid(uint64_t xid) {
  HealthEvent e;
  e.xid = xid;
  return e;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    logging::Init(0);
    tracker_ = std::make_unique<HealthTracker>(XidPolicy());
  }

  HealthStateOptions Options(const std::string& boot = "boot-1") {
    return {.dir = (dir_ / "state").string(), .boot_id = boot};
  }
  fs::path File() { return dir_ / "state" / "health-state.json"; }

  const gdp::testing::TempDir tmp_{"state-store"};
  const fs::path dir_ = tmp_.path() / "d";
  std::unique_ptr<HealthTracker> tracker_;
};

TEST_F(StateStoreTest, SavedStateLoadsInTheSameBoot) {
  HealthStateStore store(Options());
  EXPECT_TRUE(store.enabled());
  EXPECT_EQ(store.path(), File().string());
  tracker_->OnEvent(kGpu0, Xid(48), t0);
  store.Save(*tracker_, t0);  // makes the directory
  ASSERT_TRUE(fs::exists(File()));

  HealthStateStore again(Options());
  HealthState loaded = again.Load();
  EXPECT_EQ(loaded.boot_id, "boot-1");
  HealthState want = tracker_->Export(t0);
  want.boot_id = "boot-1";
  EXPECT_EQ(loaded, want);
}

TEST_F(StateStoreTest, NotEnabledWithoutDirectoryOrBootId) {
  for (const HealthStateOptions& o :
       {HealthStateOptions{.dir = "", .boot_id = "b"},
        HealthStateOptions{.dir = (dir_ / "state").string(), .boot_id = ""}}) {
    HealthStateStore store(o);
    EXPECT_FALSE(store.enabled());
    EXPECT_EQ(store.path(), "");
    tracker_->OnEvent(kGpu0, Xid(48), t0);
    EXPECT_THAT(store.Load().gpus, IsEmpty());
    store.Save(*tracker_, t0);
    EXPECT_THAT(store.Cleared(), IsEmpty());
    EXPECT_FALSE(fs::exists(dir_ / "state"));
  }
}

TEST_F(StateStoreTest, WritesOnlyWhenTheContentChanges) {
  HealthStateStore store(Options());
  store.Load();
  store.Save(*tracker_, t0);  // nothing to keep: no file made
  EXPECT_FALSE(fs::exists(File()));
  tracker_->OnEvent(kGpu0, Xid(48), t0);
  store.Save(*tracker_, t0);
  ASSERT_TRUE(fs::exists(File()));
  // Unchanged: not written again (the file someone removed stays away).
  fs::remove(File());
  store.Save(*tracker_, t0 + absl::Seconds(1));
  EXPECT_FALSE(fs::exists(File()));
  // Changed: written.
  tracker_->OnEvent(kGpu1, Xid(48), t0 + absl::Seconds(2));
  store.Save(*tracker_, t0 + absl::Seconds(2));
  EXPECT_THAT(Slurp(File()), HasSubstr(kGpu1.uuid));
}

TEST_F(StateStoreTest, StateOfAnotherBootIsDroppedAndReplaced) {
  {
    HealthStateStore before(Options("boot-1"));
    tracker_->OnEvent(kGpu0, Xid(48), t0);
    before.Save(*tracker_, t0);
  }
  HealthStateStore after(Options("boot-2"));
  EXPECT_THAT(after.Load().gpus, IsEmpty());
  EXPECT_TRUE(fs::exists(File()));  // not moved aside: nothing is wrong
  EXPECT_FALSE(fs::exists(File().string() + ".corrupt"));
  HealthTracker fresh{XidPolicy()};
  after.Save(fresh, t0);  // the stale file gives way to this boot's
  absl::StatusOr<HealthState> now = ReadHealthState(File().string());
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ(now->boot_id, "boot-2");
  EXPECT_THAT(now->gpus, IsEmpty());
  EXPECT_THAT(after.Cleared(), IsEmpty());  // a stale GPU was never ours
}

TEST_F(StateStoreTest, BadFilesAreMovedAsideAndIgnored) {
  const std::string good = [&] {
    HealthState s;
    s.boot_id = "boot-1";
    SavedUnit u;
    u.state = SavedUnitState::kNeedsReset;
    u.reason = "XID 48";
    u.cause = {HealthCause::Kind::kXid, 48};
    u.since = t0;
    s.gpus[kGpu0.uuid] = SavedGpu{.index = 0, .units = {u}};
    return SerializeHealthState(s);
  }();
  struct {
    const char* name;
    std::function<void()> make;
    const char* logged;
  } cases[] = {
      {"empty", [&] { std::ofstream empty{File()}; }, "the file is empty"},
      {"truncated", [&] { std::ofstream(File()) << good.substr(0, 40); },
       "not JSON (truncated or corrupt)"},
      {"garbage",
       [&] {
         std::ofstream(File()) << "\x7f"
                                  "ELF\x02\x01";
       },
       "not JSON"},
      {"unknown version",
       [&] {
         std::string text = good;
         text.replace(text.find("\"version\": 1"), 12, "\"version\": 7");
         std::ofstream(File()) << text;
       },
       "format version 7 is not one this gpu-device-plugin reads"},
      {"a directory", [&] { fs::create_directories(File() / "x"); },
       "is not a regular file (a directory)"},
      {"too large (a valid state, padded)",
       [&] {
         std::ofstream(File())
             << good << std::string(kMaxHealthStateBytes, ' ');
       },
       "is larger than 1048576 bytes"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    fs::remove_all(dir_ / "state");
    fs::create_directories(dir_ / "state");
    c.make();
    HealthStateStore store(Options());
    ::testing::internal::CaptureStderr();
    HealthState loaded = store.Load();
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_THAT(loaded.gpus, IsEmpty());
    EXPECT_THAT(log, HasSubstr(File().string()));
    EXPECT_THAT(log, HasSubstr(c.logged));
    EXPECT_THAT(log, HasSubstr("fresh health state"));
    EXPECT_FALSE(fs::exists(File()));
    EXPECT_TRUE(fs::exists(File().string() + ".corrupt"));
    // The plugin goes on and writes a good file.
    tracker_->OnEvent(kGpu0, Xid(48), t0);
    store.Save(*tracker_, t0);
    EXPECT_TRUE(ReadHealthState(File().string()).ok());
  }
}

TEST_F(StateStoreTest, WriteFailuresAreLoggedOncePerErrorAndRetried) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "state") << "a file where the directory should be";
  HealthStateStore store(Options());
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    tracker_->OnEvent(kGpu0, Xid(i == 0 ? 94 : 48), t0 + absl::Seconds(i));
    store.Save(*tracker_, t0 + absl::Seconds(i));
  }
  std::string log = ::testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (size_t at = log.find("Cannot write the health state file");
       at != std::string::npos;
       at = log.find("Cannot write the health state file", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_THAT(log, HasSubstr((dir_ / "state").string()));
  // Once the directory can be made, the next save writes.
  fs::remove(dir_ / "state");
  ::testing::internal::CaptureStderr();
  tracker_->OnEvent(kGpu1, Xid(48), t0 + absl::Seconds(5));
  store.Save(*tracker_, t0 + absl::Seconds(5));
  log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("written again"));
  absl::StatusOr<HealthState> now = ReadHealthState(File().string());
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_THAT(now->gpus, SizeIs(2));
}

TEST_F(StateStoreTest, ClearedNamesTheGpusTheOperatorDropped) {
  HealthStateStore store(Options());
  store.Load();
  tracker_->OnEvent(kGpu0, Xid(48), t0);
  tracker_->OnEvent(kGpu1, Xid(48), t0);
  store.Save(*tracker_, t0);
  EXPECT_THAT(store.Cleared(), IsEmpty());  // unchanged

  // `health-state clear --gpu GPU-bbbb`: the file without it.
  absl::StatusOr<HealthState> s = ReadHealthState(File().string());
  ASSERT_TRUE(s.ok());
  s->gpus.erase(kGpu1.uuid);
  ASSERT_TRUE(
      WriteHealthStateText(File().string(), SerializeHealthState(*s)).ok());
  std::vector<GpuRef> cleared = store.Cleared();
  ASSERT_THAT(cleared, SizeIs(1));
  EXPECT_EQ(cleared[0].uuid, kGpu1.uuid);
  EXPECT_EQ(cleared[0].index, 1u);
  EXPECT_THAT(store.Cleared(), IsEmpty());  // read already

  // The daemon then forgets it and saves: nothing to write (a write
  // would replace the file by another inode).
  tracker_->OnCleared(kGpu1, "cleared", t0);
  struct stat before, after;
  ASSERT_EQ(stat(File().c_str(), &before), 0);
  store.Save(*tracker_, t0);
  ASSERT_EQ(stat(File().c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);

  // A removed file clears every GPU.
  fs::remove(File());
  cleared = store.Cleared();
  ASSERT_THAT(cleared, SizeIs(1));
  EXPECT_EQ(cleared[0].uuid, kGpu0.uuid);
}

// On SIGHUP as at start: a file too large to be ours (here a valid state
// padded past the bound) or a FIFO is set aside without being read, and
// nothing is cleared.
TEST_F(StateStoreTest, HeldRecordsAreWrittenUnchangedUntilClaimedOrCleared) {
  tracker_->OnEvent(kGpu0, Xid(48), t0);
  tracker_->OnEvent(kGpu1, Xid(48), t0);
  HealthStateStore first(Options());
  first.Save(*tracker_, t0);

  // A restart finds only GPU 0: GPU 1's record is held.
  HealthStateStore store(Options());
  const HealthState loaded = store.Load();
  ASSERT_THAT(loaded.gpus, SizeIs(2));
  HealthTracker now{XidPolicy()};
  now.Import(loaded, {kGpu0}, t0);
  store.Hold(loaded, {kGpu0});
  store.Save(now, t0 + absl::Hours(1));
  absl::StatusOr<HealthState> on_disk = ReadHealthState(File().string());
  ASSERT_TRUE(on_disk.ok()) << on_disk.status();
  ASSERT_TRUE(on_disk->gpus.contains(kGpu1.uuid));
  EXPECT_EQ(on_disk->gpus.at(kGpu1.uuid), loaded.gpus.at(kGpu1.uuid));

  // Not claimed for GPUs it does not hold; claimed once for GPU 1.
  EXPECT_THAT(store.Claim({kGpu0}).gpus, IsEmpty());
  HealthState claimed = store.Claim({kGpu0, kGpu1});
  EXPECT_EQ(claimed.boot_id, "boot-1");
  ASSERT_THAT(claimed.gpus, SizeIs(1));
  EXPECT_EQ(claimed.gpus.at(kGpu1.uuid), loaded.gpus.at(kGpu1.uuid));
  EXPECT_THAT(store.Claim({kGpu1}).gpus, IsEmpty());
  store.Save(now, t0 + absl::Hours(1));
  on_disk = ReadHealthState(File().string());
  ASSERT_TRUE(on_disk.ok()) << on_disk.status();
  EXPECT_FALSE(on_disk->gpus.contains(kGpu1.uuid)) << "the tracker's now";

  // Cleared by the operator while held: not written back.
  HealthStateStore cleared(Options());
  cleared.Load();
  cleared.Hold(loaded, {kGpu0});
  cleared.Save(now, t0 + absl::Hours(1));
  HealthState edited = *ReadHealthState(File().string());
  ASSERT_TRUE(edited.gpus.contains(kGpu1.uuid));
  edited.gpus.erase(kGpu1.uuid);
  ASSERT_TRUE(
      WriteHealthStateText(File().string(), SerializeHealthState(edited)).ok());
  const std::vector<GpuRef> gone = cleared.Cleared();
  ASSERT_THAT(gone, SizeIs(1));
  EXPECT_EQ(gone[0].uuid, kGpu1.uuid);
  cleared.Save(now, t0 + absl::Hours(1));
  on_disk = ReadHealthState(File().string());
  ASSERT_TRUE(on_disk.ok()) << on_disk.status();
  EXPECT_FALSE(on_disk->gpus.contains(kGpu1.uuid));
  EXPECT_THAT(cleared.Claim({kGpu1}).gpus, IsEmpty());
}

TEST_F(StateStoreTest, AFileThatCannotBeOursIsSetAsideOnSighupUnread) {
  for (const char* kind : {"padded", "fifo"}) {
    SCOPED_TRACE(kind);
    fs::remove_all(dir_ / "state");
    HealthStateStore store(Options());
    tracker_->OnEvent(kGpu0, Xid(48), t0);
    store.Save(*tracker_, t0);
    const std::string saved = Slurp(File());
    fs::remove(File());
    std::vector<GpuRef> cleared = {kGpu1};
    ::testing::internal::CaptureStderr();
    if (std::string(kind) == "padded") {
      std::ofstream(File()) << saved << std::string(kMaxHealthStateBytes, ' ');
      cleared = store.Cleared();
    } else {
      EXPECT_TRUE(testing::ReturnsWithFifoInPlace(
          File().string(), [&] { cleared = store.Cleared(); }));
    }
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_THAT(cleared, IsEmpty());
    EXPECT_THAT(log, HasSubstr("no GPU's saved state is cleared"));
    EXPECT_TRUE(fs::exists(File().string() + ".corrupt"));
    EXPECT_FALSE(fs::exists(File()));
    store.Save(*tracker_, t0);  // written back
    EXPECT_TRUE(ReadHealthState(File().string()).ok());
    fs::remove(File().string() + ".corrupt");
  }
}

TEST_F(StateStoreTest, ABadFileClearsNothing) {
  HealthStateStore store(Options());
  tracker_->OnEvent(kGpu0, Xid(48), t0);
  store.Save(*tracker_, t0);
  std::ofstream(File()) << "{\"kind\":";
  ::testing::internal::CaptureStderr();
  EXPECT_THAT(store.Cleared(), IsEmpty());
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("no GPU's saved state is cleared"));
  EXPECT_TRUE(fs::exists(File().string() + ".corrupt"));
  // The next save writes the state back.
  store.Save(*tracker_, t0);
  absl::StatusOr<HealthState> now = ReadHealthState(File().string());
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_THAT(now->gpus, SizeIs(1));
}

}  // namespace
}  // namespace gdp
