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

// A result for a share of `device` that consumed `memory` bytes.
AllocatedDevice Share(const std::string& device, const std::string& share_id,
                      uint64_t memory, const std::string& request = "gpu") {
  AllocatedDevice d{request, "gpu.nvidia.com", "node-1", device};
  d.share_id = share_id;
  d.consumed_capacity = {{"memory", memory}};
  return d;
}

// The args of each hook of CDI device `name` in spec `text`, joined.
std::vector<std::string> HookArgs(const std::string& text,
                                  const std::string& name) {
  std::vector<std::string> out;
  const nlohmann::json spec = nlohmann::json::parse(text);
  for (const nlohmann::json& d : spec["devices"]) {
    if (d["name"] != name) continue;
    for (const nlohmann::json& h :
         d["containerEdits"].value("hooks", nlohmann::json::array())) {
      std::string args;
      for (const nlohmann::json& a : h["args"]) {
        absl::StrAppend(&args, args.empty() ? "" : " ", a.get<std::string>());
      }
      out.push_back(args);
    }
  }
  return out;
}

TEST_F(PreparerTest, SharesOfOneGpuAreCdiDevicesOfTheirOwnWithTheirLimits) {
  base_->memory_limit_hook = cdi::MemoryLimitHook{
      cdi::MemoryLimitHook::Kind::kOurs, "/opt/gdp/gdp-cdi-hook", "/"};
  reader_.claims["ns/a"] =
      Allocated("a", "u-a", {Share("gpu-0", "s-1", 4ull << 30)});
  reader_.claims["ns/b"] =
      Allocated("b", "u-b", {Share("gpu-0", "s-2", 2ull << 30)});
  // Unlimited mode: 0 memory consumed, no limit.
  reader_.claims["ns/c"] = Allocated("c", "u-c", {Share("gpu-0", "s-3", 0)});
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  auto out =
      p->Prepare({{"ns", "a", "u-a"}, {"ns", "b", "u-b"}, {"ns", "c", "u-c"}});
  for (const char* uid : {"u-a", "u-b", "u-c"}) ASSERT_EQ(out[uid].error, "");
  ASSERT_EQ(out["u-a"].devices.size(), 1u);
  EXPECT_EQ(out["u-a"].devices[0].share_id, "s-1");
  EXPECT_THAT(out["u-a"].devices[0].cdi_ids,
              ElementsAre("k8s.gpu.nvidia.com/claim=u-a-gpu-0-share-s-1"));
  EXPECT_THAT(out["u-b"].devices[0].cdi_ids,
              ElementsAre("k8s.gpu.nvidia.com/claim=u-b-gpu-0-share-s-2"));
  for (const char* uid : {"u-a", "u-b", "u-c"}) {
    nlohmann::json spec = nlohmann::json::parse(ReadFileOrEmpty(SpecPath(uid)));
    EXPECT_TRUE(cdi::ValidateSpec(spec).ok()) << cdi::ValidateSpec(spec);
    EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"],
              "/dev/nvidia0");
  }
  EXPECT_THAT(HookArgs(ReadFileOrEmpty(SpecPath("u-a")), "u-a-gpu-0-share-s-1"),
              ElementsAre("gdp-cdi-hook apply-memory-limits --driver-root / "
                          "--share u-a-s-1,GPU-0,4096"));
  EXPECT_THAT(HookArgs(ReadFileOrEmpty(SpecPath("u-b")), "u-b-gpu-0-share-s-2"),
              ElementsAre("gdp-cdi-hook apply-memory-limits --driver-root / "
                          "--share u-b-s-2,GPU-0,2048"));
  EXPECT_THAT(HookArgs(ReadFileOrEmpty(SpecPath("u-c")), "u-c-gpu-0-share-s-3"),
              IsEmpty());

  // Unpreparing one share keeps the others.
  EXPECT_EQ(p->Unprepare({{"ns", "a", "u-a"}})["u-a"], "");
  EXPECT_FALSE(fs::exists(SpecPath("u-a")));
  EXPECT_TRUE(fs::exists(SpecPath("u-b")));
  EXPECT_EQ(p->prepared(), 2u);

  // A restart keeps the shares (their limits, share IDs) from the checkpoint
  // and writes the same specs.
  const std::string b_spec = ReadFileOrEmpty(SpecPath("u-b"));
  p.reset();
  fs::remove_all(dir_ / "cdi");
  p = Make("boot-2");
  ASSERT_TRUE(p->Start().ok());
  EXPECT_EQ(p->prepared(), 2u);
  EXPECT_EQ(ReadFileOrEmpty(SpecPath("u-b")), b_spec);
  const int reads = reader_.reads;
  auto again = p->Prepare({{"ns", "b", "u-b"}});
  EXPECT_EQ(reader_.reads, reads);
  ASSERT_EQ(again["u-b"].devices.size(), 1u);
  EXPECT_EQ(again["u-b"].devices[0].share_id, "s-2");
  EXPECT_EQ(again["u-b"].devices[0].memory_limit, 2ull << 30);

  // gpu-0 is given as shares: a claim for it whole is refused, and one
  // claim with gpu-1 whole and as a share too.
  reader_.claims["ns/w"] =
      Allocated("w", "u-w", {{"gpu", "gpu.nvidia.com", "node-1", "gpu-0"}});
  EXPECT_THAT(p->Prepare({{"ns", "w", "u-w"}})["u-w"].error,
              HasSubstr("device gpu-0 is given whole while claim ns/c (u-c) "
                        "has it as a share"));
  reader_.claims["ns/x"] =
      Allocated("x", "u-x",
                {{"gpu", "gpu.nvidia.com", "node-1", "gpu-1"},
                 Share("gpu-1", "s-9", 1ull << 30, "other")});
  EXPECT_THAT(p->Prepare({{"ns", "x", "u-x"}})["u-x"].error,
              HasSubstr("device gpu-1 is given as share s-9 and also whole"));
  EXPECT_EQ(p->prepared(), 2u);
  // adminAccess may overlap shares (recorded, and kept across a restart).
  AllocatedDevice admin{"gpu", "gpu.nvidia.com", "node-1", "gpu-0"};
  admin.admin_access = true;
  reader_.claims["ns/admin"] = Allocated("admin", "u-admin", {admin});
  EXPECT_EQ(p->Prepare({{"ns", "admin", "u-admin"}})["u-admin"].error, "");
  p.reset();
  p = Make("boot-2");
  ASSERT_TRUE(p->Start().ok());
  EXPECT_EQ(p->prepared(), 3u);
  EXPECT_TRUE(p->Prepare({{"ns", "admin", "u-admin"}})["u-admin"]
                  .devices.at(0)
                  .admin_access);
}

TEST_F(PreparerTest, ASharesLimitNeedsAHookAndWholeMiB) {
  reader_.claims["ns/a"] =
      Allocated("a", "u-a", {Share("gpu-0", "s-1", 4ull << 30)});
  reader_.claims["ns/b"] = Allocated("b", "u-b", {Share("gpu-0", "s-2", 1000)});
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  EXPECT_THAT(p->Prepare({{"ns", "a", "u-a"}})["u-a"].error,
              HasSubstr("no memory-limit hook is configured"));
  base_->memory_limit_hook = cdi::MemoryLimitHook{
      cdi::MemoryLimitHook::Kind::kOurs, "/opt/gdp/gdp-cdi-hook", "/"};
  p->SetSources(devices_.get(), base_);
  EXPECT_THAT(p->Prepare({{"ns", "b", "u-b"}})["u-b"].error,
              HasSubstr("device gpu-0 share s-2: "));
  EXPECT_EQ(p->prepared(), 0u);
}

// NVIDIA's hook has one limit per container, taken from the env: two
// shares of one GPU in one claim (whose container gets both) are refused
// at prepare; one share per claim is fine.
TEST_F(PreparerTest, NvidiasHookRefusesTwoSharesOfOneGpuInOneClaim) {
  base_->memory_limit_hook = cdi::MemoryLimitHook{
      cdi::MemoryLimitHook::Kind::kNvidia, "/usr/bin/nvidia-cdi-hook", "/"};
  reader_.claims["ns/two"] =
      Allocated("two", "u-two",
                {Share("gpu-0", "s-1", 4ull << 30),
                 Share("gpu-0", "s-2", 4ull << 30, "other")});
  reader_.claims["ns/one"] =
      Allocated("one", "u-one", {Share("gpu-0", "s-3", 4ull << 30)});
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  auto out = p->Prepare({{"ns", "two", "u-two"}, {"ns", "one", "u-one"}});
  EXPECT_THAT(out["u-two"].error,
              HasSubstr("the claim's 2 shares: two shares of GPU GPU-0 in one "
                        "container: NVIDIA's hook cannot add their limits up"));
  EXPECT_FALSE(fs::exists(SpecPath("u-two")));
  EXPECT_EQ(out["u-one"].error, "");
  EXPECT_EQ(p->prepared(), 1u);
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
