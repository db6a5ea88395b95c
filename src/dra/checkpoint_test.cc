#include "dra/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "testing/temp_dir.h"
#include "util/fifo_testing.h"

namespace gdp::dra {
namespace {

using ::testing::HasSubstr;

Checkpoint Sample() {
  Checkpoint c;
  c.boot_id = "boot-1";
  PreparedClaim p;
  p.ref = {"ns", "claim", "u-1"};
  p.devices = {
      {{"gpu"}, "node-1", "gpu-0", {"k8s.gpu.nvidia.com/claim=u-1-gpu-0"}}};
  Sharing mps;
  mps.strategy = Sharing::Strategy::kMps;
  mps.active_thread_percentage = 30;
  mps.pinned_memory_limit = 1ull << 30;
  mps.per_device_pinned_memory_limit["0"] = 2ull << 30;
  p.sharing["gpu-0"] = mps;
  c.claims["u-1"] = p;
  PreparedClaim q;
  q.ref = {"ns", "other", "u-2"};
  q.devices = {{{"a", "b"}, "node-1", "gpu-1", {"x"}}};
  Sharing ts;
  ts.interval = Sharing::Interval::kMedium;
  q.sharing["gpu-1"] = ts;
  c.claims["u-2"] = q;
  return c;
}

TEST(CheckpointTest, RoundTrip) {
  const std::string text = SerializeCheckpoint(Sample());
  absl::StatusOr<Checkpoint> back = ParseCheckpoint(text, "cp.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Sample());
  EXPECT_EQ(SerializeCheckpoint(Checkpoint{}),
            SerializeCheckpoint(
                *ParseCheckpoint(SerializeCheckpoint(Checkpoint{}), "x")));
}

TEST(CheckpointTest, SharesAreVersion2AndVersion1StillReads) {
  // Without shares: version 1, which older plugins read.
  const std::string v1 = SerializeCheckpoint(Sample());
  EXPECT_EQ(nlohmann::json::parse(v1)["version"], 1);
  Checkpoint c = Sample();
  PreparedDevice share{{"gpu"},
                       "node-1",
                       "gpu-1",
                       {"k8s.gpu.nvidia.com/claim=u-3-gpu-1-share-s"}};
  share.share_id = "s";
  share.memory_limit = 4ull << 30;
  share.shares = 2;
  PreparedDevice admin{{"gpu"}, "node-1", "gpu-0", {"y"}};
  admin.admin_access = true;
  c.claims["u-3"] = {{"ns", "shared", "u-3"}, {share, admin}, {}};
  const std::string v2 = SerializeCheckpoint(c);
  EXPECT_EQ(nlohmann::json::parse(v2)["version"], 2);
  absl::StatusOr<Checkpoint> back = ParseCheckpoint(v2, "cp.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, c);
  // A share with an empty ID is damage.
  nlohmann::json bad = nlohmann::json::parse(v2);
  for (nlohmann::json& claim : bad["claims"]) {
    if (claim["uid"] == "u-3") claim["devices"][0]["shareID"] = "";
  }
  EXPECT_THAT(ParseCheckpoint(RestampCheckpoint(bad.dump()), "cp.json")
                  .status()
                  .message(),
              HasSubstr("cp.json: claim u-3: a device has an empty shareID"));
}

TEST(CheckpointTest, RestampMakesAnEditedCheckpointReadable) {
  const std::string edited = absl::StrReplaceAll(SerializeCheckpoint(Sample()),
                                                 {{"node-1", "node-2"}});
  ASSERT_FALSE(ParseCheckpoint(edited, "cp.json").ok());
  absl::StatusOr<Checkpoint> back =
      ParseCheckpoint(RestampCheckpoint(edited), "cp.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_NE(*back, Sample());
  EXPECT_EQ(RestampCheckpoint("not json"), "not json");
  EXPECT_EQ(RestampCheckpoint("[1]"), "[1]");
}

TEST(CheckpointTest, CorruptOrNewerIsAnErrorNamingTheFile) {
  const std::string good = SerializeCheckpoint(Sample());
  struct Case {
    std::string text;
    absl::StatusCode code;
    const char* message;
  } cases[] = {
      {"", absl::StatusCode::kDataLoss, "cp.json: not valid JSON"},
      {good.substr(0, good.size() / 2), absl::StatusCode::kDataLoss,
       "not valid JSON"},
      {"{}", absl::StatusCode::kDataLoss, "not a checkpoint of gpu-device"},
      // Found by the dra_checkpoint fuzzer: a kind that is not a string.
      {R"({"bootID": "b", "checksums": [], "kind": 2})",
       absl::StatusCode::kDataLoss, "not a checkpoint of gpu-device"},
      {"[1]", absl::StatusCode::kDataLoss, "not a checkpoint of gpu-device"},
      {absl::StrReplaceAll(good, {{"node-1", "node-2"}}),
       absl::StatusCode::kDataLoss, "checksum mismatch"},
      {absl::StrReplaceAll(good, {{"\"version\": 1", "\"version\": 7"}}),
       absl::StatusCode::kFailedPrecondition,
       "written in format 7 by a newer gpu-device-plugin; this one reads up "
       "to 3"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Checkpoint> r = ParseCheckpoint(c.text, "cp.json");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), c.code) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
    EXPECT_THAT(r.status().message(), HasSubstr("cp.json"));
  }
}

TEST(CheckpointTest, FileIsWrittenAtomicallyAndPrivately) {
  const gdp::testing::TempDir tmp("checkpoint");
  const std::filesystem::path dir = tmp.path() / "d";
  const std::string path = (dir / "sub" / "cp.json").string();
  EXPECT_TRUE(absl::IsNotFound(ReadCheckpoint(path).status()));
  ASSERT_TRUE(WriteCheckpoint(path, Sample()).ok());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  absl::StatusOr<Checkpoint> back = ReadCheckpoint(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Sample());
}

// A checkpoint file that cannot be one of ours (too large, not a regular
// file) is refused as damage without being read or blocking, so the
// preparer sets it aside and starts.
TEST(CheckpointTest, WhatIsNotASmallRegularFileIsDamageRefusedUnread) {
  const gdp::testing::TempDir tmp("checkpoint-bad");
  const std::filesystem::path dir = tmp.path();
  const std::string huge = (dir / "huge.json").string();
  // 200 MB, sparse: read whole, it took 479 MB at every start.
  std::ofstream(huge).close();
  ASSERT_EQ(truncate(huge.c_str(), 200 << 20), 0);
  const std::string over = (dir / "over.json").string();
  std::ofstream(over) << std::string(kMaxCheckpointBytes + 1, ' ');
  const std::string link = (dir / "link.json").string();
  ASSERT_TRUE(WriteCheckpoint((dir / "good.json").string(), Sample()).ok());
  std::filesystem::create_symlink(dir / "good.json", link);
  const struct {
    std::string path;
    const char* message;
  } cases[] = {
      {huge, "huge.json is larger than 4194304 bytes"},
      {over, "over.json is larger than 4194304 bytes"},
      {link, "link.json is not a regular file (a symlink)"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<Checkpoint> r = ReadCheckpoint(c.path);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
  }
  absl::StatusOr<Checkpoint> fifo;
  const std::string fifo_path = (dir / "fifo.json").string();
  EXPECT_TRUE(testing::ReturnsWithFifoInPlace(
      fifo_path, [&] { fifo = ReadCheckpoint(fifo_path); }));
  EXPECT_EQ(fifo.status().code(), absl::StatusCode::kDataLoss) << fifo.status();
  EXPECT_THAT(fifo.status().message(), HasSubstr("not a regular file"));
}

TEST(CheckpointTest, DeepOrOversizedCheckpointsAreRefused) {
  absl::StatusOr<Checkpoint> deep = ParseCheckpoint(
      std::string(1000000, '[') + std::string(1000000, ']'), "cp.json");
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(deep.status().message(),
              HasSubstr("cp.json: JSON nested deeper than 100 levels"));

  // What would be refused when read is not written.
  const gdp::testing::TempDir tmp("checkpoint-big");
  const std::filesystem::path dir = tmp.path() / "d";
  Checkpoint big = Sample();
  big.claims["u-1"].ref.name = std::string(kMaxCheckpointBytes, 'n');
  const std::string path = (dir / "cp.json").string();
  absl::Status written = WriteCheckpoint(path, big);
  EXPECT_EQ(written.code(), absl::StatusCode::kResourceExhausted) << written;
  EXPECT_THAT(written.message(), HasSubstr("more than the 4194304"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(CheckpointTest, ItsDirectoryIsPrivateWhateverTheUmask) {
  const gdp::testing::TempDir tmp("checkpoint-dir");
  const std::filesystem::path dir = tmp.path() / "d";
  const mode_t old = umask(0);
  absl::Status written =
      WriteCheckpoint((dir / "plugin" / "cp.json").string(), Sample());
  umask(old);
  ASSERT_TRUE(written.ok()) << written;
  struct stat st;
  ASSERT_EQ(stat((dir / "plugin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST(CheckpointTest, DynamicMigAndClaimStatesAreVersion3) {
  Checkpoint c = Sample();
  MigRecord made;
  made.placement = {"GPU-0", 0, "1g.10gb", 19, 0, 3, 1};
  made.gi_id = 9;
  made.ci_id = 0;
  made.uuid = "MIG-1";
  PreparedDevice d{{"gpu"}, "node-1", "gpu-0-mig-1g10gb-19-3", {"z"}};
  d.mig = made;
  c.claims["u-4"] = {{"ns", "mig", "u-4"}, {d}, {}};
  MigRecord intent;
  intent.placement = {"GPU-0", 0, "3g.40gb", 9, 2, 4, 4};
  PreparedDevice e{{"gpu"}, "node-1", "gpu-0-mig-3g40gb-9-4", {"w"}};
  e.mig = intent;
  c.claims["u-5"] = {{"ns", "cut", "u-5"}, {e}, {}, ClaimState::kPreparing};
  c.claims["u-6"] = {{"ns", "going", "u-6"}, {d}, {}, ClaimState::kUnpreparing};
  const std::string v3 = SerializeCheckpoint(c);
  nlohmann::json j = nlohmann::json::parse(v3);
  EXPECT_EQ(j["version"], 3);
  absl::StatusOr<Checkpoint> back = ParseCheckpoint(v3, "cp.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, c);
  // A state alone makes version 3 too; prepared claims carry none.
  Checkpoint s = Sample();
  s.claims["u-1"].state = ClaimState::kUnpreparing;
  EXPECT_EQ(nlohmann::json::parse(SerializeCheckpoint(s))["version"], 3);
  EXPECT_FALSE(j["claims"][0].contains("state"));
  // Damage is named.
  for (nlohmann::json& claim : j["claims"]) {
    if (claim["uid"] == "u-5") claim["state"] = "Halfway";
  }
  absl::StatusOr<Checkpoint> bad =
      ParseCheckpoint(RestampCheckpoint(j.dump()), "cp.json");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("claim u-5: unknown state 'Halfway'"));
  j = nlohmann::json::parse(v3);
  for (nlohmann::json& claim : j["claims"]) {
    if (claim["uid"] == "u-4") claim["devices"][0]["mig"].erase("size");
  }
  bad = ParseCheckpoint(RestampCheckpoint(j.dump()), "cp.json");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("size"));
}

TEST(CheckpointTest, TheFuzzCorpusVersion3Reads) {
  // The fuzzer's version 3 seed (its checksum made right, as the fuzzer
  // does) is a checkpoint, so fuzzing starts from every new field.
  const std::string path =
      absl::StrCat(GDP_CHECKPOINT_CORPUS, "/dynamic-mig-v3.json");
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  absl::StatusOr<Checkpoint> c = ParseCheckpoint(RestampCheckpoint(text), path);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->claims.size(), 3u);
  EXPECT_EQ(c->claims["uid-a"].state, ClaimState::kPrepared);
  EXPECT_EQ(c->claims["uid-a"].devices[0].mig->gi_id, 2u);
  EXPECT_EQ(c->claims["uid-b"].state, ClaimState::kPreparing);
  EXPECT_FALSE(c->claims["uid-b"].devices[0].mig->gi_id.has_value());
  EXPECT_EQ(c->claims["uid-c"].state, ClaimState::kUnpreparing);
}

}  // namespace
}  // namespace gdp::dra
