#include "health/state_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/temp_dir.h"
#include "util/fifo_testing.h"

namespace gdp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using json = nlohmann::json;

constexpr char kPath[] = "/state/health-state.json";

// A state with every kind of unit.
HealthState Sample() {
  const absl::Time t0 = absl::FromUnixNanos(1700000000123456789);
  HealthState s;
  s.boot_id = "0f1e2d3c-boot";
  SavedUnit reset;
  reset.state = SavedUnitState::kNeedsReset;
  reset.reason = "XID 48 (ECC); unhealthy until the GPU is reset";
  reset.cause = {HealthCause::Kind::kXid, 48};
  reset.since = t0;
  reset.failures = {t0};
  SavedUnit mig;
  mig.gi = 2;
  mig.ci = 0;
  mig.state = SavedUnitState::kRecoverable;
  mig.reason = "MIG device does not answer NVML (Unknown Error)";
  mig.cause = {HealthCause::Kind::kNvml, 0};
  mig.since = t0 - absl::Seconds(90);
  mig.quiet = absl::Minutes(2);
  mig.probe_at = t0 + absl::Seconds(30);
  mig.probe_error = "nvmlDeviceGetMemoryInfo: Unknown Error";
  mig.failures = {t0 - absl::Minutes(5), t0 - absl::Seconds(90)};
  s.gpus["GPU-aaaa"] = SavedGpu{.index = 3, .units = {mig, reset}};
  SavedUnit lost;
  lost.state = SavedUnitState::kLost;
  lost.reason = "GPU lost (GPU is lost); unhealthy until it answers again";
  lost.cause = {HealthCause::Kind::kLost, 0};
  lost.since = absl::FromUnixSeconds(1700000100);
  lost.failures = {lost.since};
  s.gpus["GPU-bbbb"] = SavedGpu{.index = 0, .units = {lost}};
  SavedUnit flapped;
  flapped.state = SavedUnitState::kRecoverable;
  flapped.reason = "reset (...) after its 2nd failure in 10m";
  flapped.cause = {HealthCause::Kind::kFlapping, 0};
  flapped.since = t0;
  flapped.quiet = absl::Seconds(90) + absl::Milliseconds(250);
  flapped.probe_at = t0 + flapped.quiet;
  flapped.failures = {t0 - absl::Minutes(1), t0 - absl::Seconds(1)};
  s.gpus["GPU-cccc"] = SavedGpu{.index = 1, .units = {flapped}};
  SavedUnit quiet_again;  // healthy, kept for its failures
  quiet_again.failures = {absl::Now()};
  SavedUnit ecc;
  ecc.state = SavedUnitState::kNeedsReset;
  ecc.reason = "double-bit ECC error";
  ecc.cause = {HealthCause::Kind::kEcc, 0};
  ecc.since = absl::Now();
  ecc.gi = 1;  // a GPU instance, every compute instance
  SavedUnit nvlink;
  nvlink.state = SavedUnitState::kNeedsReset;
  nvlink.reason = "NVLink 5 went inactive";
  nvlink.cause = {HealthCause::Kind::kNvLink, 0};
  nvlink.since = absl::Now();
  nvlink.gi = 2;
  s.gpus["GPU-dddd"] =
      SavedGpu{.index = 7, .units = {ecc, nvlink, quiet_again}};
  return s;
}

TEST(StateFileTest, RoundTripKeepsEverything) {
  const HealthState s = Sample();
  const std::string text = SerializeHealthState(s);
  absl::StatusOr<HealthState> back = ParseHealthState(text, kPath);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(SerializeHealthState(*back), text);
  EXPECT_EQ(text.back(), '\n');
  // Readable: names, not numbers.
  EXPECT_THAT(text, HasSubstr("\"state\": \"needs-reset\""));
  EXPECT_THAT(text, HasSubstr("\"cause\": \"xid\""));
  EXPECT_THAT(text, HasSubstr("\"quietPeriod\": \"2m\""));
  EXPECT_THAT(text, HasSubstr("\"since\": \"2023-11-14T22:13:20.123456789"));
}

// What NVML said of a GPU that needs a reset (recovery action, volatile ECC
// counts) is kept beside its units; each part only when known. Files
// without it (from before it was kept) still read.
TEST(StateFileTest, ResetMarkersRoundTrip) {
  HealthState s = Sample();
  s.gpus["GPU-aaaa"].reset_markers =
      NvmlResetMarkers{NVML_GPU_RECOVERY_ACTION_GPU_RESET, 4, 1};
  s.gpus["GPU-bbbb"].reset_markers =
      NvmlResetMarkers{std::nullopt, std::nullopt, 0};
  const std::string text = SerializeHealthState(s);
  EXPECT_THAT(text, HasSubstr("\"resetMarkers\": {\n        "
                              "\"recoveryAction\": 1,\n        "
                              "\"volatileEccSbe\": 4,\n        "
                              "\"volatileEccDbe\": 1\n      }"));
  absl::StatusOr<HealthState> back = ParseHealthState(text, kPath);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
  json doc = json::parse(text);
  doc["gpus"][0]["resetMarkers"] = json::array();
  absl::StatusOr<HealthState> bad = ParseHealthState(doc.dump(), kPath);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("gpus[0].resetMarkers: must be an object"));
  doc["gpus"][0]["resetMarkers"] = {{"recoveryAction", -1}};
  bad = ParseHealthState(doc.dump(), kPath);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("gpus[0].resetMarkers.recoveryAction: must be an "
                        "unsigned integer"));
}

TEST(StateFileTest, EmptyStateRoundTrips) {
  HealthState s;
  s.boot_id = "b";
  absl::StatusOr<HealthState> back =
      ParseHealthState(SerializeHealthState(s), kPath);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
}

TEST(StateFileTest, WholeGpuUnitsNameNoInstance) {
  json doc = json::parse(SerializeHealthState(Sample()));
  const json& unit = doc["gpus"][1]["units"][0];  // GPU-bbbb, lost
  EXPECT_FALSE(unit.contains("gpuInstance"));
  EXPECT_FALSE(unit.contains("computeInstance"));
  EXPECT_EQ(doc["gpus"][0]["units"][0]["gpuInstance"], 2);
  EXPECT_EQ(doc["gpus"][0]["units"][0]["computeInstance"], 0);
}

struct BadCase {
  const char* name;
  std::function<void(json&)> edit;  // of a good document
  absl::StatusCode code;
  const char* message;  // after "<path>: "
};

TEST(StateFileTest, BadDocumentsAreRefusedNamingWhatIsWrong) {
  const BadCase cases[] = {
      {"not an object", [](json& j) { j = json::array(); },
       absl::StatusCode::kDataLoss, "not a JSON object"},
      {"wrong kind", [](json& j) { j["kind"] = "gpu-device-plugin/other"; },
       absl::StatusCode::kDataLoss, "kind 'gpu-device-plugin/other' is not"},
      {"no kind", [](json& j) { j.erase("kind"); }, absl::StatusCode::kDataLoss,
       "kind: missing"},
      {"no version", [](json& j) { j.erase("version"); },
       absl::StatusCode::kDataLoss, "version: missing"},
      {"version a string", [](json& j) { j["version"] = "1"; },
       absl::StatusCode::kDataLoss, "version: must be an integer"},
      {"newer version", [](json& j) { j["version"] = 2; },
       absl::StatusCode::kFailedPrecondition,
       "format version 2 is not one this gpu-device-plugin reads (1)"},
      {"version 0", [](json& j) { j["version"] = 0; },
       absl::StatusCode::kFailedPrecondition, "format version 0"},
      {"no boot ID", [](json& j) { j.erase("bootID"); },
       absl::StatusCode::kDataLoss, "bootID: missing"},
      {"gpus an object", [](json& j) { j["gpus"] = json::object(); },
       absl::StatusCode::kDataLoss, "gpus: must be an array"},
      {"gpu without uuid", [](json& j) { j["gpus"][0].erase("uuid"); },
       absl::StatusCode::kDataLoss, "gpus[0].uuid: missing"},
      {"empty uuid", [](json& j) { j["gpus"][0]["uuid"] = ""; },
       absl::StatusCode::kDataLoss, "gpus[0].uuid: empty"},
      {"uuid twice", [](json& j) { j["gpus"][1]["uuid"] = "GPU-aaaa"; },
       absl::StatusCode::kDataLoss, "gpus[1].uuid: GPU-aaaa is listed twice"},
      {"negative index", [](json& j) { j["gpus"][0]["index"] = -1; },
       absl::StatusCode::kDataLoss, "gpus[0].index: must be an unsigned"},
      {"units missing", [](json& j) { j["gpus"][2].erase("units"); },
       absl::StatusCode::kDataLoss, "gpus[2].units: missing"},
      {"unit a string", [](json& j) { j["gpus"][0]["units"][1] = "x"; },
       absl::StatusCode::kDataLoss, "gpus[0].units[1]: must be an object"},
      {"unknown state",
       [](json& j) { j["gpus"][0]["units"][0]["state"] = "broken"; },
       absl::StatusCode::kDataLoss,
       "gpus[0].units[0].state: unknown state 'broken'"},
      {"unknown cause",
       [](json& j) { j["gpus"][1]["units"][0]["cause"] = "cosmic"; },
       absl::StatusCode::kDataLoss,
       "gpus[1].units[0].cause: unknown cause 'cosmic'"},
      {"xid missing", [](json& j) { j["gpus"][0]["units"][1].erase("xid"); },
       absl::StatusCode::kDataLoss, "gpus[0].units[1].xid: missing"},
      {"xid negative", [](json& j) { j["gpus"][0]["units"][1]["xid"] = -48; },
       absl::StatusCode::kDataLoss, "gpus[0].units[1].xid: must be"},
      {"gpu instance all",
       [](json& j) { j["gpus"][0]["units"][0]["gpuInstance"] = 4294967295u; },
       absl::StatusCode::kDataLoss, "gpus[0].units[0].gpuInstance: must be"},
      {"bad time",
       [](json& j) { j["gpus"][0]["units"][1]["since"] = "yesterday"; },
       absl::StatusCode::kDataLoss,
       "gpus[0].units[1].since: 'yesterday' is not an RFC 3339 time"},
      {"bad probe time",
       [](json& j) { j["gpus"][0]["units"][0]["probeAt"] = 17; },
       absl::StatusCode::kDataLoss,
       "gpus[0].units[0].probeAt: must be a string"},
      {"bad quiet period",
       [](json& j) { j["gpus"][0]["units"][0]["quietPeriod"] = "soon"; },
       absl::StatusCode::kDataLoss,
       "gpus[0].units[0].quietPeriod: 'soon' is not a duration"},
      {"negative quiet period",
       [](json& j) { j["gpus"][0]["units"][0]["quietPeriod"] = "-1m"; },
       absl::StatusCode::kDataLoss, "gpus[0].units[0].quietPeriod: '-1m'"},
      {"failures a string",
       [](json& j) { j["gpus"][1]["units"][0]["failures"] = "now"; },
       absl::StatusCode::kDataLoss,
       "gpus[1].units[0].failures: must be an array"},
      {"bad failure time",
       [](json& j) { j["gpus"][1]["units"][0]["failures"][0] = "x"; },
       absl::StatusCode::kDataLoss,
       "gpus[1].units[0].failures[0]: 'x' is not an RFC 3339 time"},
      {"no failures",
       [](json& j) { j["gpus"][3]["units"][1].erase("failures"); },
       absl::StatusCode::kDataLoss, "gpus[3].units[1].failures: missing"},
  };
  const json good = json::parse(SerializeHealthState(Sample()));
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    json doc = good;
    c.edit(doc);
    absl::StatusOr<HealthState> got = ParseHealthState(doc.dump(), kPath);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), c.code) << got.status();
    EXPECT_THAT(std::string(got.status().message()),
                StartsWith(std::string(kPath) + ": "));
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.message));
  }
}

TEST(StateFileTest, TextThatIsNotJsonIsDataLoss) {
  const std::string good = SerializeHealthState(Sample());
  struct {
    const char* name;
    std::string text;
    const char* message;
  } cases[] = {
      {"empty", "", "the file is empty"},
      {"truncated", good.substr(0, good.size() / 2), "not JSON (truncated"},
      {"cut before the last brace", good.substr(0, good.size() - 2),
       "not JSON"},
      {"binary", std::string("\x00\x7f\xff garbage", 12), "not JSON"},
      {"two documents", good + good, "not JSON"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<HealthState> got = ParseHealthState(c.text, kPath);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(got.status().message()),
                HasSubstr(std::string(kPath) + ": " + c.message));
  }
}

class StateFileDirTest : public ::testing::Test {
 protected:
  const gdp::testing::TempDir tmp_{"state-file"};
  const fs::path dir_ = tmp_.path() / "d";
};

TEST_F(StateFileDirTest, WriteCreatesTheDirectoryAndReadsBack) {
  const std::string path = HealthStatePath((dir_ / "a" / "b").string());
  EXPECT_EQ(path, (dir_ / "a" / "b" / "health-state.json").string());
  EXPECT_EQ(HealthStatePath("/x/"), "/x/health-state.json");
  const HealthState s = Sample();
  ASSERT_TRUE(WriteHealthStateText(path, SerializeHealthState(s)).ok());
  absl::StatusOr<HealthState> back = ReadHealthState(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
  // Nothing left beside it (no temporary file).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "a" / "b"),
                          fs::directory_iterator()),
            1);
}

TEST_F(StateFileDirTest, ReadFailuresNameThePath) {
  const std::string missing = (dir_ / "none.json").string();
  absl::StatusOr<HealthState> got = ReadHealthState(missing);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(got.status().message()), HasSubstr(missing));
  fs::create_directories(dir_ / "adir");
  got = ReadHealthState((dir_ / "adir").string());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr((dir_ / "adir").string()));
}

// What cannot be our state file (too large, not a regular file) is damage,
// refused without being read and without blocking on a FIFO; a valid
// state padded past the bound too.
TEST_F(StateFileDirTest, WhatIsNotASmallRegularFileIsDamageRefusedUnread) {
  fs::create_directories(dir_);
  const std::string good = SerializeHealthState(Sample());
  const std::string padded = (dir_ / "padded.json").string();
  std::ofstream(padded) << good << std::string(kMaxHealthStateBytes, ' ');
  const std::string huge = (dir_ / "huge.json").string();
  std::ofstream(huge).close();
  ASSERT_EQ(truncate(huge.c_str(), 200 << 20), 0);
  const std::string target = (dir_ / "target.json").string();
  std::ofstream(target) << good;
  const std::string link = (dir_ / "link.json").string();
  fs::create_symlink(target, link);
  const struct {
    std::string path;
    const char* message;
  } cases[] = {
      {padded, "padded.json is larger than 1048576 bytes"},
      {huge, "huge.json is larger than 1048576 bytes"},
      {link, "link.json is not a regular file (a symlink)"},
      {dir_.string(), "is not a regular file (a directory)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    absl::StatusOr<HealthState> got = ReadHealthState(c.path);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.message));
  }
  absl::StatusOr<std::string> fifo;
  const std::string fifo_path = (dir_ / "fifo.json").string();
  EXPECT_TRUE(testing::ReturnsWithFifoInPlace(
      fifo_path, [&] { fifo = ReadHealthStateText(fifo_path); }));
  EXPECT_EQ(fifo.status().code(), absl::StatusCode::kDataLoss) << fifo.status();
  // Nothing is written that would be refused when read.
  EXPECT_EQ(
      WriteHealthStateText(target, std::string(kMaxHealthStateBytes + 1, ' '))
          .code(),
      absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(ReadHealthState(target).ok());
}

TEST_F(StateFileDirTest, DeepDocumentsAreRefusedWhileParsed) {
  absl::StatusOr<HealthState> got = ParseHealthState(
      std::string(750000, '[') + std::string(750000, ']'), kPath);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(got.status().message()),
              HasSubstr("nested deeper than 100 levels"));
}

TEST_F(StateFileDirTest, ItsDirectoryIsPrivateWhateverTheUmask) {
  const mode_t old = umask(0);
  absl::Status written = WriteHealthStateText(
      HealthStatePath((dir_ / "state").string()), SerializeHealthState({}));
  umask(old);
  ASSERT_TRUE(written.ok()) << written;
  struct stat st;
  ASSERT_EQ(stat((dir_ / "state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(StateFileDirTest, MoveAsideKeepsTheBadFile) {
  fs::create_directories(dir_);
  const std::string path = (dir_ / "health-state.json").string();
  std::ofstream(path) << "{bad";
  absl::StatusOr<std::string> aside = MoveHealthStateAside(path);
  ASSERT_TRUE(aside.ok()) << aside.status();
  EXPECT_EQ(*aside, path + ".corrupt");
  EXPECT_FALSE(fs::exists(path));
  std::ifstream in(*aside);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{bad");
  EXPECT_FALSE(MoveHealthStateAside(path).ok());  // nothing there now
}

}  // namespace
}  // namespace gdp
