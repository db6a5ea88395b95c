#include "dra/preparer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cdi/validate.h"
#include "dra/claim_edits.h"
#include "dra/preparer_testing.h"
#include "util/file_watcher.h"

namespace gdp::dra {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST_F(PreparerTest, PreparesWritesTheSpecAndIsIdempotent) {
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  auto out = p->Prepare({{"ns", "one", "u-1"}});
  ASSERT_EQ(out.size(), 1u);
  const PrepareResult& r = out["u-1"];
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(
      r.devices[0],
      (PreparedDevice{
          {"gpu"}, "node-1", "gpu-0", {"k8s.gpu.nvidia.com/claim=u-1-gpu-0"}}));
  const std::string text = ReadFileOrEmpty(SpecPath("u-1"));
  nlohmann::json spec = nlohmann::json::parse(text);
  EXPECT_TRUE(cdi::ValidateSpec(spec).ok()) << cdi::ValidateSpec(spec);
  EXPECT_EQ(spec["kind"], "k8s.gpu.nvidia.com/claim");
  EXPECT_EQ(spec["devices"][0]["name"], "u-1-gpu-0");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"],
            "/dev/nvidia0");
  EXPECT_EQ(spec["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidiactl");
  EXPECT_EQ(p->prepared(), 1u);

  // Again: answered from the checkpoint, without reading the claim.
  const int reads = reader_.reads;
  auto again = p->Prepare({{"ns", "one", "u-1"}, {"ns", "one", "u-1"}});
  EXPECT_EQ(again.size(), 1u);
  EXPECT_EQ(again["u-1"].devices, r.devices);
  EXPECT_EQ(reader_.reads, reads);
  // A spec that went missing is written again.
  fs::remove(SpecPath("u-1"));
  EXPECT_EQ(p->Prepare({{"ns", "one", "u-1"}})["u-1"].error, "");
  EXPECT_EQ(ReadFileOrEmpty(SpecPath("u-1")), text);

  // Unprepare removes both; again is still success.
  auto un = p->Unprepare({{"ns", "one", "u-1"}});
  EXPECT_EQ(un["u-1"], "");
  EXPECT_FALSE(fs::exists(SpecPath("u-1")));
  EXPECT_EQ(p->prepared(), 0u);
  EXPECT_EQ(p->Unprepare({{"ns", "one", "u-1"}})["u-1"], "");
  EXPECT_EQ(p->Unprepare({{"ns", "never", "u-9"}})["u-9"], "");
}

TEST_F(PreparerTest, EachBadClaimFailsAlone) {
  reader_.claims["ns/other-pool"] = Allocated(
      "other-pool", "u-2", {{"gpu", "gpu.nvidia.com", "node-2", "gpu-0"}});
  reader_.claims["ns/other-driver"] = Allocated(
      "other-driver", "u-3", {{"nic", "net.example.com", "node-1", "eth0"}});
  reader_.claims["ns/unknown"] = Allocated(
      "unknown", "u-4", {{"gpu", "gpu.nvidia.com", "node-1", "gpu-7"}});
  reader_.claims["ns/renewed"] = Allocated(
      "renewed", "u-new", {{"gpu", "gpu.nvidia.com", "node-1", "gpu-1"}});
  AllocatedClaim bad_config = Allocated(
      "bad-config", "u-6", {{"gpu", "gpu.nvidia.com", "node-1", "gpu-1"}});
  DeviceConfig mig;
  mig.kind = DeviceConfig::Kind::kMig;
  mig.requests = {"gpu"};
  bad_config.configs = {mig};
  reader_.claims["ns/bad-config"] = bad_config;
  AllocatedClaim slow =
      Allocated("slow", "u-7", {{"gpu", "gpu.nvidia.com", "node-1", "gpu-1"}});
  DeviceConfig interval;
  interval.sharing.interval = Sharing::Interval::kShort;
  slow.configs = {interval};
  reader_.claims["ns/slow"] = slow;
  std::vector<Device> health = {Dev("gpu-0", 0), Dev("gpu-1", 1)};
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  struct Case {
    ClaimRef ref;
    const char* error;
  } cases[] = {
      {{"ns", "other-pool", "u-2"},
       "allocated device gpu-0 of pool node-2, not of this node's pool node-1"},
      {{"ns", "other-driver", "u-3"},
       "no device of driver gpu.nvidia.com is allocated to it (its devices "
       "are of net.example.com)"},
      {{"ns", "unknown", "u-4"}, "device gpu-7, which pool node-1 does not"},
      {{"ns", "missing", "u-5"}, "ns/missing not found"},
      {{"ns", "renewed", "u-old"}, "a claim with UID u-new"},
      {{"ns", "bad-config", "u-6"}, "cannot apply MigDeviceConfig"},
      {{"ns", "slow", "u-7"}, "interval Short cannot be applied"},
  };
  std::vector<ClaimRef> refs = {{"ns", "one", "u-1"}};
  for (const Case& c : cases) refs.push_back(c.ref);
  auto out = p->Prepare(refs);
  EXPECT_EQ(out["u-1"].error, "");
  EXPECT_EQ(out["u-1"].devices.size(), 1u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.ref.name);
    EXPECT_THAT(out[c.ref.uid].error, HasSubstr(c.error));
    EXPECT_THAT(out[c.ref.uid].error,
                HasSubstr(absl::StrCat("claim ns/", c.ref.name)));
    EXPECT_THAT(out[c.ref.uid].devices, IsEmpty());
    EXPECT_FALSE(fs::exists(SpecPath(c.ref.uid)));
  }
  EXPECT_EQ(p->prepared(), 1u);

  // An unhealthy device is not handed out.
  health[0].health = Health::kUnhealthy;
  health[0].unhealthy_reason = "XID 79 (fell off the bus)";
  devices_->Replace(health);
  reader_.claims["ns/two"] =
      Allocated("two", "u-8", {{"gpu", "gpu.nvidia.com", "node-1", "gpu-0"}});
  EXPECT_THAT(p->Prepare({{"ns", "two", "u-8"}})["u-8"].error,
              HasSubstr("device gpu-0 is unhealthy: XID 79"));
}

TEST_F(PreparerTest, RestartAndRebootKeepClaimsAndRewriteSpecs) {
  reader_.claims["ns/both"] =
      Allocated("both", "u-2",
                {{"a", "gpu.nvidia.com", "node-1", "gpu-0"},
                 {"b", "gpu.nvidia.com", "node-1", "gpu-1"}});
  {
    auto p = Make("boot-1");
    ASSERT_TRUE(p->Start().ok());
    EXPECT_EQ(p->Prepare({{"ns", "one", "u-1"}, {"ns", "both", "u-2"}})["u-2"]
                  .devices.size(),
              2u);
  }
  const std::string spec = ReadFileOrEmpty(SpecPath("u-2"));
  // A plugin restart: known without reading the claims.
  {
    auto p = Make("boot-1");
    ASSERT_TRUE(p->Start().ok());
    EXPECT_EQ(p->prepared(), 2u);
    const int reads = reader_.reads;
    EXPECT_EQ(p->Prepare({{"ns", "both", "u-2"}})["u-2"].devices.size(), 2u);
    EXPECT_EQ(reader_.reads, reads);
  }
  // A reboot: /var/run/cdi is empty again; Start writes the specs back.
  fs::remove_all(dir_ / "cdi");
  {
    auto p = Make("boot-2");
    ASSERT_TRUE(p->Start().ok());
    EXPECT_EQ(ReadFileOrEmpty(SpecPath("u-2")), spec);
    EXPECT_TRUE(fs::exists(SpecPath("u-1")));
  }
  absl::StatusOr<Checkpoint> cp = ReadCheckpoint((dir_ / "cp.json").string());
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(cp->boot_id, "boot-2");
  // A device gone after the reboot: its claim is dropped, the other kept.
  devices_->Replace({Dev("gpu-0", 0)});
  fs::remove_all(dir_ / "cdi");
  {
    auto p = Make("boot-3");
    ASSERT_TRUE(p->Start().ok());
    EXPECT_EQ(p->prepared(), 1u);
    EXPECT_TRUE(fs::exists(SpecPath("u-1")));
    EXPECT_FALSE(fs::exists(SpecPath("u-2")));
  }
}

// --dra-driver-name names the claims' CDI kind and spec files as NVIDIA's
// driver does from its own name (k8s.<driver>/claim, k8s.<driver>-claim_
// <uid>.json), so two drivers on a node never write each other's specs.
TEST_F(PreparerTest, SpecFilesAndCdiIdsFollowTheDriverName) {
  reader_.claims["ns/ex"] =
      Allocated("ex", "u-9", {{"gpu", "gpu.example.com", "node-1", "gpu-0"}});
  auto p = Make("boot-1", "gpu.example.com");
  ASSERT_TRUE(p->Start().ok());
  PrepareResult r = p->Prepare({{"ns", "ex", "u-9"}})["u-9"];
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_THAT(r.devices[0].cdi_ids,
              ElementsAre("k8s.gpu.example.com/claim=u-9-gpu-0"));
  const fs::path spec = dir_ / "cdi" / "k8s.gpu.example.com-claim_u-9.json";
  ASSERT_TRUE(fs::exists(spec));
  EXPECT_FALSE(fs::exists(dir_ / "cdi" / "k8s.gpu.nvidia.com-claim_u-9.json"));
  nlohmann::json parsed = nlohmann::json::parse(ReadFileOrEmpty(spec));
  EXPECT_EQ(parsed["kind"], "k8s.gpu.example.com/claim");
  EXPECT_TRUE(cdi::ValidateSpec(parsed).ok()) << cdi::ValidateSpec(parsed);
  EXPECT_EQ(p->Unprepare({{"ns", "ex", "u-9"}})["u-9"], "");
  EXPECT_FALSE(fs::exists(spec));
}

// One claim's error cannot push the kubelet's answer past its 4 MiB: it is
// cut, whatever the API server or the claim said.
TEST_F(PreparerTest, AClaimsErrorIsCut) {
  reader_.claims["ns/long-device"] = Allocated(
      "long-device", "u-8",
      {{"gpu", "gpu.nvidia.com", "node-1", std::string(5 << 20, 'd')}});
  reader_.on_read = [](const ClaimRef& ref, absl::Time, CallBudget&) {
    return ref.name == "huge-error"
               ? absl::UnavailableError(std::string(5 << 20, 'x'))
               : absl::OkStatus();
  };
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  auto out = p->Prepare({{"ns", "huge-error", "u-7"},
                         {"ns", "long-device", "u-8"},
                         {"ns", "one", "u-1"}});
  for (const char* uid : {"u-7", "u-8"}) {
    SCOPED_TRACE(uid);
    EXPECT_LE(out[uid].error.size(), 2100u);
    EXPECT_THAT(out[uid].error, HasSubstr("bytes)"));
  }
  EXPECT_EQ(out["u-1"].error, "");
}

TEST_F(PreparerTest, CorruptCheckpointIsSetAsideNotFatal) {
  std::ofstream(dir_ / "cp.json") << "{\"kind\": 3";
  auto p = Make();
  absl::Status s = p->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("cp.json"));
  EXPECT_FALSE(fs::exists(dir_ / "cp.json"));
  int aside = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    if (e.path().filename().string().rfind("cp.json.bad-", 0) == 0) ++aside;
  }
  EXPECT_EQ(aside, 1);
  // It keeps working.
  EXPECT_EQ(p->Prepare({{"ns", "one", "u-1"}})["u-1"].error, "");
  EXPECT_TRUE(ReadCheckpoint((dir_ / "cp.json").string()).ok());
}

}  // namespace
}  // namespace gdp::dra
