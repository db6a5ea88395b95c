// The Preparer with dynamic MIG devices: instances made at prepare and
// destroyed at unprepare through a MigMaker (a table here; the fake NVML in
// tests/integration/dra_dynamic_mig_e2e_test.cc), the intent recorded
// around them, and the reconciliation at start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cdi/validate.h"
#include "device/mig_caps.h"
#include "dra/checkpoint.h"
#include "dra/dynamic_mig.h"
#include "dra/preparer.h"
#include "dra/preparer_testing.h"
#include "util/file_watcher.h"

namespace gdp::dra {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kGpu[] = "GPU-0";

// H100 placements: 1g.10gb (19) at any start, 2g.20gb (14) at 0, 2, 4,
// 3g.40gb (9) at 0 and 4 over 4 memory slices.
MigPlacement Placement(unsigned profile_id, unsigned start) {
  MigPlacement p;
  p.gpu_uuid = kGpu;
  p.gpu_minor = 0;
  p.profile_id = profile_id;
  switch (profile_id) {
    case 19:
      p.profile = "1g.10gb", p.size = 1, p.ci_profile_id = 0;
      break;
    case 14:
      p.profile = "2g.20gb", p.size = 2, p.ci_profile_id = 1;
      break;
    default:
      p.profile = "3g.40gb", p.size = 4, p.ci_profile_id = 2;
      break;
  }
  p.start = start;
  return p;
}

std::string Name(const MigPlacement& p) {
  std::string profile = p.profile;
  std::erase(profile, '.');
  return absl::StrCat("gpu-0-mig-", profile, "-", p.profile_id, "-", p.start);
}

class PreparerMigTest : public PreparerTest {
 protected:
  void SetUp() override {
    PreparerTest::SetUp();
    std::vector<Device> devices = {Dev("gpu-0", 0)};
    for (unsigned s = 0; s < 7; ++s) Add(Placement(19, s), &devices);
    for (unsigned s : {0u, 2u, 4u}) Add(Placement(14, s), &devices);
    for (unsigned s : {0u, 4u}) Add(Placement(9, s), &devices);
    devices_ = std::make_unique<DeviceSet>(std::move(devices));
    // Capability minors: GPU instance g -> 100 + g, its CI c -> 200 + 10g + c.
    std::string minors = "config 1\nmonitor 2\n";
    for (unsigned gi = 0; gi < 15; ++gi) {
      absl::StrAppend(&minors, "gpu0/gi", gi, "/access ", 100 + gi, "\n");
      for (unsigned ci = 0; ci < 8; ++ci) {
        absl::StrAppend(&minors, "gpu0/gi", gi, "/ci", ci, "/access ",
                        200 + 10 * gi + ci, "\n");
      }
    }
    fs::create_directories(dir_ / "proc/driver/nvidia-caps");
    std::ofstream(dir_ / "proc/driver/nvidia-caps/mig-minors") << minors;
    std::ofstream(dir_ / "proc/devices")
        << "Character devices:\n  1 mem\n121 nvidia-caps\n195 nvidia\n\n"
           "Block devices:\n  8 sd\n";
  }

  void Add(const MigPlacement& p, std::vector<Device>* devices) {
    Device d = Dev(Name(p), 0);
    d.id = Name(p);
    devices->push_back(d);
    base_->dynamic_mig[Name(p)] = p;
  }

  // A preparer making instances through `maker` (maker_ when null).
  std::unique_ptr<Preparer> MakeMigPreparer(MigMaker* maker = nullptr) {
    auto p = std::make_unique<Preparer>(
        PreparerOptions{.driver_name = "gpu.nvidia.com",
                        .pool = "node-1",
                        .cdi_dir = (dir_ / "cdi").string(),
                        .checkpoint_path = (dir_ / "cp.json").string(),
                        .boot_id = "boot-1",
                        .proc_root = (dir_ / "proc").string(),
                        .on_mig_step = {}},
        reader_, maker != nullptr ? maker : &maker_);
    p->SetSources(devices_.get(), base_);
    return p;
  }

  // Claim `name` (UID u-<name>) allocated the devices of `placements`.
  void Claim(const std::string& name, std::vector<MigPlacement> placements) {
    std::vector<AllocatedDevice> results;
    for (const MigPlacement& p : placements) {
      results.push_back({"gpu", "gpu.nvidia.com", "node-1", Name(p)});
    }
    reader_.claims["ns/" + name] =
        Allocated(name, "u-" + name, std::move(results));
  }

  std::string Prepare(Preparer& p, const std::string& name) {
    return p.Prepare({{"ns", name, "u-" + name}})["u-" + name].error;
  }

  Checkpoint Saved() {
    absl::StatusOr<Checkpoint> c = ReadCheckpoint((dir_ / "cp.json").string());
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : Checkpoint{};
  }

  TableMigMaker maker_;
};

TEST_F(PreparerMigTest, PrepareMakesTheInstanceAndUnprepareDestroysIt) {
  auto p = MakeMigPreparer();
  ASSERT_TRUE(p->Start().ok());
  Claim("one", {Placement(19, 3)});
  auto out = p->Prepare({{"ns", "one", "u-one"}});
  ASSERT_EQ(out["u-one"].error, "");
  ASSERT_EQ(out["u-one"].devices.size(), 1u);
  EXPECT_THAT(
      out["u-one"].devices[0].cdi_ids,
      ElementsAre("k8s.gpu.nvidia.com/claim=u-one-gpu-0-mig-1g10gb-19-3"));
  EXPECT_THAT(maker_.On(kGpu), ElementsAre(MigGpuInstance{1, 19, 3, 1, {0}}));
  // The MIG device's nodes: its GPU's, GPU instance 1's and its compute
  // instance 0's capabilities.
  nlohmann::json spec =
      nlohmann::json::parse(ReadFileOrEmpty(SpecPath("u-one")));
  // The capability nodes by number (nvidia-caps' major from /proc/devices):
  // the host has no such node for an instance made at run time.
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"],
            nlohmann::json::parse(R"([
              {"path": "/dev/nvidia0"},
              {"path": "/dev/nvidia-caps/nvidia-cap101", "type": "c",
               "major": 121, "minor": 101},
              {"path": "/dev/nvidia-caps/nvidia-cap210", "type": "c",
               "major": 121, "minor": 210}])"));
  EXPECT_TRUE(cdi::ValidateSpec(spec).ok()) << cdi::ValidateSpec(spec);
  Checkpoint c = Saved();
  ASSERT_TRUE(c.claims.contains("u-one"));
  EXPECT_EQ(c.claims["u-one"].state, ClaimState::kPrepared);
  const MigRecord& r = *c.claims["u-one"].devices[0].mig;
  EXPECT_EQ(r.placement, Placement(19, 3));
  EXPECT_EQ(r.gi_id, 1u);
  EXPECT_EQ(r.ci_id, 0u);
  EXPECT_EQ(r.uuid, "MIG-GPU-0-1-0");
  EXPECT_EQ(p->prepared(), 1u);
  // Again: from the checkpoint, nothing made.
  EXPECT_EQ(Prepare(*p, "one"), "");
  EXPECT_EQ(maker_.calls["CreateGpuInstance"], 1);

  EXPECT_EQ(p->Unprepare({{"ns", "one", "u-one"}})["u-one"], "");
  EXPECT_THAT(maker_.On(kGpu), IsEmpty());
  EXPECT_THAT(Saved().claims, IsEmpty());
  EXPECT_FALSE(fs::exists(SpecPath("u-one")));
  EXPECT_EQ(p->prepared(), 0u);
}

TEST_F(PreparerMigTest, MixesOfProfilesUntilTheGpuIsFull) {
  auto p = MakeMigPreparer();
  ASSERT_TRUE(p->Start().ok());
  // 3g.40gb at 0 (slices 0-3), 2g.20gb at 4, 1g.10gb at 6: full.
  Claim("a", {Placement(9, 0)});
  Claim("b", {Placement(14, 4), Placement(19, 6)});
  EXPECT_EQ(Prepare(*p, "a"), "");
  EXPECT_EQ(Prepare(*p, "b"), "");
  EXPECT_EQ(maker_.On(kGpu).size(), 3u);
  // One more on a slice already taken: refused before anything is made.
  Claim("c", {Placement(19, 5)});
  EXPECT_THAT(Prepare(*p, "c"), HasSubstr("overlaps MIG device "
                                          "gpu-0-mig-2g20gb-14-4 of claim "
                                          "ns/b (u-b)"));
  EXPECT_EQ(maker_.calls["CreateGpuInstance"], 3);
  EXPECT_EQ(p->Unprepare({{"ns", "b", "u-b"}})["u-b"], "");
  EXPECT_EQ(Prepare(*p, "c"), "");
  EXPECT_THAT(maker_.On(kGpu), ElementsAre(MigGpuInstance{1, 9, 0, 4, {0}},
                                           MigGpuInstance{2, 19, 5, 1, {0}}));
}

TEST_F(PreparerMigTest, PreparesAtOnceOnOneGpu) {
  // Seven 1g.10gb claims from seven threads all made; then two claims of
  // overlapping placements at once: exactly one is prepared, the other
  // refused before anything is made.
  auto p = MakeMigPreparer();
  ASSERT_TRUE(p->Start().ok());
  for (unsigned s = 0; s < 7; ++s) {
    Claim(absl::StrCat("one-", s), {Placement(19, s)});
  }
  std::vector<std::string> errors(7);
  {
    std::vector<std::thread> threads;
    for (unsigned s = 0; s < 7; ++s) {
      threads.emplace_back(
          [&, s] { errors[s] = Prepare(*p, absl::StrCat("one-", s)); });
    }
    for (std::thread& t : threads) t.join();
  }
  EXPECT_THAT(errors, ::testing::Each(""));
  EXPECT_EQ(maker_.On(kGpu).size(), 7u);
  EXPECT_EQ(p->prepared(), 7u);
  for (unsigned s = 0; s < 7; ++s) {
    const std::string uid = absl::StrCat("u-one-", s);
    EXPECT_EQ(p->Unprepare({{"ns", absl::StrCat("one-", s), uid}})[uid], "");
  }
  EXPECT_THAT(maker_.On(kGpu), IsEmpty());

  Claim("left", {Placement(9, 0)});
  Claim("right", {Placement(14, 2)});
  std::string left, right;
  {
    std::thread a([&] { left = Prepare(*p, "left"); });
    std::thread b([&] { right = Prepare(*p, "right"); });
    a.join();
    b.join();
  }
  EXPECT_NE(left.empty(), right.empty()) << left << " | " << right;
  EXPECT_THAT(left + right, HasSubstr("overlaps MIG device"));
  EXPECT_EQ(maker_.On(kGpu).size(), 1u);
  EXPECT_EQ(maker_.calls["CreateGpuInstance"], 8);
}

TEST_F(PreparerMigTest, AnOccupiedPlacementFailsTheClaimAndDestroysNothing) {
  maker_.gpus[kGpu] = {{7, 14, 2, 2, {0}}};  // made by someone else
  auto p = MakeMigPreparer();
  ASSERT_TRUE(p->Start().ok());
  Claim("one", {Placement(19, 3)});
  const std::string error = Prepare(*p, "one");
  EXPECT_THAT(error, HasSubstr("claim ns/one (u-one): making MIG device "
                               "gpu-0-mig-1g10gb-19-3: GPU GPU-0 placement "
                               "1g.10gb (profile ID 19) at memory slices 3-3 "
                               "is occupied by GPU instance 7 (profile ID 14, "
                               "memory slices 2-3), which this driver did "
                               "not make"));
  EXPECT_THAT(error, HasSubstr("nothing was destroyed"));
  EXPECT_THAT(maker_.On(kGpu), ElementsAre(MigGpuInstance{7, 14, 2, 2, {0}}));
  EXPECT_EQ(maker_.calls["DestroyGpuInstance"], 0);
  // Refused before its intent was recorded: nothing was written.
  EXPECT_EQ(maker_.calls["CreateGpuInstance"], 0);
  EXPECT_FALSE(fs::exists(dir_ / "cp.json"));
  EXPECT_FALSE(fs::exists(SpecPath("u-one")));
}

TEST_F(PreparerMigTest, AFailedMakeUndoesWhatTheClaimMade) {
  auto p = MakeMigPreparer();
  ASSERT_TRUE(p->Start().ok());
  Claim("two", {Placement(19, 0), Placement(19, 1)});
  maker_.fail["CreateComputeInstance"] = absl::ResourceExhaustedError("full");
  const std::string error = Prepare(*p, "two");
  EXPECT_THAT(error, HasSubstr("creating the compute instance of GPU GPU-0 "
                               "placement 1g.10gb (profile ID 19) at memory "
                               "slices 0-0 in GPU instance 1: full"));
  EXPECT_THAT(maker_.On(kGpu), IsEmpty());
  EXPECT_THAT(Saved().claims, IsEmpty());
  EXPECT_EQ(p->prepared(), 0u);
}

// A hung NVML call given up (NvmlRunner: past its deadline) that still
// makes its GPU instance; while `hung`, every later call fails at once, as
// calls about a GPU with a hung call do.
class GivenUpMaker final : public MigMaker {
 public:
  explicit GivenUpMaker(TableMigMaker& table) : table_(table) {}
  absl::StatusOr<std::vector<MigGpuInstance>> List(
      const std::string& gpu) override {
    if (hung) return Hung("nvmlDeviceGetGpuInstances");
    return table_.List(gpu);
  }
  absl::StatusOr<unsigned> CreateGpuInstance(const MigPlacement& p) override {
    if (hung) return Hung("nvmlDeviceCreateGpuInstanceWithPlacement");
    absl::StatusOr<unsigned> made = table_.CreateGpuInstance(p);
    if (!made.ok()) return made;
    hung = true;
    return Hung("nvmlDeviceCreateGpuInstanceWithPlacement");
  }
  absl::StatusOr<unsigned> CreateComputeInstance(const MigPlacement& p,
                                                 unsigned gi_id) override {
    if (hung) return Hung("nvmlGpuInstanceCreateComputeInstance");
    return table_.CreateComputeInstance(p, gi_id);
  }
  absl::StatusOr<std::string> MigUuid(const std::string& gpu, unsigned gi_id,
                                      unsigned ci_id) override {
    if (hung) return Hung("nvmlDeviceGetMigDeviceHandleByIndex");
    return table_.MigUuid(gpu, gi_id, ci_id);
  }
  absl::Status DestroyComputeInstance(const std::string& gpu, unsigned gi_id,
                                      unsigned ci_id) override {
    if (hung) return Hung("nvmlComputeInstanceDestroy");
    return table_.DestroyComputeInstance(gpu, gi_id, ci_id);
  }
  absl::Status DestroyGpuInstance(const std::string& gpu,
                                  unsigned gi_id) override {
    if (hung) return Hung("nvmlGpuInstanceDestroy");
    return table_.DestroyGpuInstance(gpu, gi_id);
  }
  bool hung = false;

 private:
  static absl::Status Hung(const char* call) {
    return absl::DeadlineExceededError(
        absl::StrCat("NVML ", call, " did not return in 10s"));
  }
  TableMigMaker& table_;
};

TEST_F(PreparerMigTest, AGivenUpMakeKeepsTheIntentToDestroyWhatItMade) {
  GivenUpMaker hanging(maker_);
  auto p = MakeMigPreparer(&hanging);
  ASSERT_TRUE(p->Start().ok());
  Claim("one", {Placement(19, 3)});
  EXPECT_THAT(Prepare(*p, "one"),
              HasSubstr("nvmlDeviceCreateGpuInstanceWithPlacement did not "
                        "return in 10s"));
  // The call given up made the instance, which no ID names: the claim stays
  // recorded as being prepared, so its placement is destroyed later.
  ASSERT_EQ(maker_.On(kGpu).size(), 1u);
  EXPECT_EQ(Saved().claims["u-one"].state, ClaimState::kPreparing);
  EXPECT_EQ(p->prepared(), 0u);
  // The hang over, the next start destroys it.
  hanging.hung = false;
  auto again = MakeMigPreparer(&hanging);
  ASSERT_TRUE(again->Start().ok());
  EXPECT_THAT(maker_.On(kGpu), IsEmpty());
  EXPECT_THAT(Saved().claims, IsEmpty());
}

TEST_F(PreparerMigTest, AnInstanceInUseKeepsTheClaimUnpreparingUntilFree) {
  auto p = MakeMigPreparer();
  ASSERT_TRUE(p->Start().ok());
  Claim("one", {Placement(14, 2)});
  ASSERT_EQ(Prepare(*p, "one"), "");
  maker_.busy.insert("GPU-0/1");
  const std::string error = p->Unprepare({{"ns", "one", "u-one"}})["u-one"];
  EXPECT_THAT(error, HasSubstr("destroying its MIG instances: destroying "
                               "compute instance 0 of GPU instance 1 of GPU "
                               "GPU-0 placement 2g.20gb"));
  EXPECT_THAT(error, HasSubstr("in use"));
  EXPECT_EQ(Saved().claims["u-one"].state, ClaimState::kUnpreparing);
  EXPECT_EQ(p->prepared(), 0u);
  EXPECT_FALSE(fs::exists(SpecPath("u-one")));
  // A prepare meanwhile is refused; the kubelet's next unprepare goes on.
  EXPECT_THAT(Prepare(*p, "one"), HasSubstr("it is being unprepared"));
  maker_.busy.clear();
  EXPECT_EQ(p->Unprepare({{"ns", "one", "u-one"}})["u-one"], "");
  EXPECT_THAT(maker_.On(kGpu), IsEmpty());
  EXPECT_THAT(Saved().claims, IsEmpty());
}

TEST_F(PreparerMigTest, AGpuNotInMigModeFailsTheClaimSayingSo) {
  auto p = MakeMigPreparer();
  ASSERT_TRUE(p->Start().ok());
  maker_.fail["List"] =
      absl::UnimplementedError("NVML nvmlDeviceGetGpuInstances: Not Supported");
  Claim("one", {Placement(19, 0)});
  EXPECT_THAT(Prepare(*p, "one"),
              HasSubstr("making MIG device gpu-0-mig-1g10gb-19-0: GPU GPU-0 "
                        "is not in MIG mode (NVML nvmlDeviceGetGpuInstances: "
                        "Not Supported); this driver makes MIG instances on "
                        "GPUs in MIG mode and never changes the mode"));
  EXPECT_EQ(maker_.calls["CreateGpuInstance"], 0);
  EXPECT_THAT(Saved().claims, IsEmpty());
}

TEST_F(PreparerMigTest, WithoutAMigMakerADynamicDeviceFailsItsClaim) {
  auto p = Make();  // no MigMaker
  ASSERT_TRUE(p->Start().ok());
  Claim("one", {Placement(19, 0)});
  EXPECT_THAT(Prepare(*p, "one"),
              HasSubstr("device gpu-0-mig-1g10gb-19-0 is a dynamic MIG device, "
                        "and this plugin makes no MIG instances"));
}

TEST_F(PreparerMigTest, WithoutAMigMakerRecordedInstancesAreKept) {
  // A checkpoint with MIG instances read by a plugin without NVML: nothing
  // is destroyed or forgotten; unpreparing says why it cannot.
  Checkpoint c;
  c.boot_id = "boot-1";
  PreparedClaim cut;
  cut.ref = {"ns", "cut", "u-cut"};
  cut.state = ClaimState::kPreparing;
  PreparedDevice d{{"gpu"}, "node-1", Name(Placement(19, 1)), {"x"}};
  d.mig.emplace();
  d.mig->placement = Placement(19, 1);
  cut.devices = {d};
  c.claims["u-cut"] = cut;
  ASSERT_TRUE(WriteCheckpoint((dir_ / "cp.json").string(), c).ok());
  auto p = Make();
  ASSERT_TRUE(p->Start().ok());
  EXPECT_THAT(p->Unprepare({{"ns", "cut", "u-cut"}})["u-cut"],
              HasSubstr("this plugin makes and destroys no MIG instances"));
  EXPECT_TRUE(Saved().claims.contains("u-cut"));
}

// A claim of `placements` in `state`, made as `made` says (GPU instance and
// compute instance IDs, or none).
PreparedClaim Recorded(const std::string& name, ClaimState state,
                       std::vector<MigRecord> records) {
  PreparedClaim c;
  c.ref = {"ns", name, "u-" + name};
  c.state = state;
  for (MigRecord& r : records) {
    PreparedDevice d{
        {"gpu"},
        "node-1",
        Name(r.placement),
        {ClaimCdiId("gpu.nvidia.com", c.ref.uid, Name(r.placement))}};
    d.mig = std::move(r);
    c.devices.push_back(std::move(d));
  }
  return c;
}

MigRecord Made(const MigPlacement& p, unsigned gi, unsigned ci) {
  MigRecord r;
  r.placement = p;
  r.gi_id = gi;
  r.ci_id = ci;
  r.uuid = absl::StrCat("MIG-GPU-0-", gi, "-", ci);
  return r;
}

MigRecord Intent(const MigPlacement& p) {
  MigRecord r;
  r.placement = p;
  return r;
}

TEST_F(PreparerMigTest, StartAdoptsRemakesRemovesAndLeavesOthersAlone) {
  // What NVML holds after a crash: the prepared claim's instance (GI 1 at
  // 0), the instance of a claim cut short while being prepared (GI 2 at 1,
  // no compute instance yet) and of one cut short while being unprepared
  // (GI 3 at 2), and one nobody recorded (GI 4 at 3). The second prepared
  // claim's instance (at 4) is gone, as after a reboot.
  maker_.gpus[kGpu] = {{1, 19, 0, 1, {0}},
                       {2, 19, 1, 1, {}},
                       {3, 19, 2, 1, {0}},
                       {4, 19, 3, 1, {0}}};
  Checkpoint c;
  c.boot_id = "boot-1";
  c.claims["u-kept"] =
      Recorded("kept", ClaimState::kPrepared, {Made(Placement(19, 0), 1, 0)});
  c.claims["u-cut"] =
      Recorded("cut", ClaimState::kPreparing, {Intent(Placement(19, 1))});
  c.claims["u-going"] = Recorded("going", ClaimState::kUnpreparing,
                                 {Made(Placement(19, 2), 3, 0)});
  c.claims["u-gone"] =
      Recorded("gone", ClaimState::kPrepared, {Made(Placement(14, 4), 9, 0)});
  ASSERT_TRUE(WriteCheckpoint((dir_ / "cp.json").string(), c).ok());
  auto p = MakeMigPreparer();
  ASSERT_TRUE(p->Start().ok());
  EXPECT_THAT(maker_.On(kGpu), ElementsAre(MigGpuInstance{1, 19, 0, 1, {0}},
                                           MigGpuInstance{4, 19, 3, 1, {0}},
                                           MigGpuInstance{5, 14, 4, 2, {0}}));
  Checkpoint after = Saved();
  EXPECT_EQ(after.claims.size(), 2u);
  EXPECT_EQ(after.claims["u-kept"], c.claims["u-kept"]);
  // Made again: new IDs recorded, its spec written with them.
  EXPECT_EQ(after.claims["u-gone"].devices[0].mig->gi_id, 5u);
  EXPECT_EQ(after.claims["u-gone"].devices[0].mig->uuid, "MIG-GPU-0-5-0");
  EXPECT_THAT(ReadFileOrEmpty(SpecPath("u-gone")),
              HasSubstr("/dev/nvidia-caps/nvidia-cap105"));
  EXPECT_EQ(p->prepared(), 2u);
  // The kubelet asks again for the claim cut short: made anew.
  Claim("cut", {Placement(19, 1)});
  EXPECT_EQ(Prepare(*p, "cut"), "");
  EXPECT_EQ(maker_.On(kGpu).size(), 4u);
}

TEST_F(PreparerMigTest, AfterARebootNoInstanceFoundIsAdoptedOrDestroyed) {
  // The checkpoint is of boot 0: the reboot destroyed its instances, so
  // those at the recorded placements now (GI 7 at 0, GI 8 at 1, GI 9 at 2)
  // were made since by someone else, e.g. a MIG config applied at boot.
  maker_.gpus[kGpu] = {
      {7, 19, 0, 1, {0}}, {8, 19, 1, 1, {0}}, {9, 19, 2, 1, {0}}};
  const std::vector<MigGpuInstance> theirs = maker_.gpus[kGpu];
  Checkpoint c;
  c.boot_id = "boot-0";
  c.claims["u-kept"] =
      Recorded("kept", ClaimState::kPrepared, {Made(Placement(19, 0), 1, 0)});
  c.claims["u-cut"] =
      Recorded("cut", ClaimState::kPreparing, {Intent(Placement(19, 1))});
  c.claims["u-going"] = Recorded("going", ClaimState::kUnpreparing,
                                 {Made(Placement(19, 2), 3, 0)});
  c.claims["u-gone"] =
      Recorded("gone", ClaimState::kPrepared, {Made(Placement(19, 4), 2, 0)});
  ASSERT_TRUE(WriteCheckpoint((dir_ / "cp.json").string(), c).ok());
  auto p = MakeMigPreparer();
  ASSERT_TRUE(p->Start().ok());
  // Theirs left alone; only the free placement's instance made again.
  std::vector<MigGpuInstance> now = theirs;
  now.push_back({10, 19, 4, 1, {0}});
  EXPECT_EQ(maker_.On(kGpu), now);
  Checkpoint after = Saved();
  EXPECT_EQ(after.claims.size(), 1u);
  EXPECT_EQ(after.claims["u-gone"].devices[0].mig->gi_id, 10u);
  EXPECT_EQ(p->prepared(), 1u);
}

TEST_F(PreparerMigTest, AClaimLeftBeingPreparedIsUndoneWhenItComesAgain) {
  // Its instance could not be destroyed at start (in use: not ours to
  // wait for), so it stays recorded; once free, its next prepare undoes it
  // and prepares it anew.
  maker_.gpus[kGpu] = {{2, 19, 1, 1, {0}}};
  maker_.busy.insert("GPU-0/2");
  Checkpoint c;
  c.boot_id = "boot-1";
  c.claims["u-cut"] =
      Recorded("cut", ClaimState::kPreparing, {Intent(Placement(19, 1))});
  ASSERT_TRUE(WriteCheckpoint((dir_ / "cp.json").string(), c).ok());
  auto p = MakeMigPreparer();
  ASSERT_TRUE(p->Start().ok());
  EXPECT_EQ(Saved().claims["u-cut"].state, ClaimState::kPreparing);
  Claim("cut", {Placement(19, 1)});
  EXPECT_THAT(Prepare(*p, "cut"),
              HasSubstr("an earlier attempt to prepare it cannot be undone"));
  maker_.busy.clear();
  EXPECT_EQ(Prepare(*p, "cut"), "");
  EXPECT_THAT(maker_.On(kGpu), ElementsAre(MigGpuInstance{1, 19, 1, 1, {0}}));
  EXPECT_EQ(Saved().claims["u-cut"].state, ClaimState::kPrepared);
}

TEST_F(PreparerMigTest, ASecondCallWhileInstancesAreDestroyedIsRefused) {
  // A retry of the kubelet while the first unprepare still destroys: were
  // it let through, its destroy (by placement) could come after a new
  // claim made an instance there, and take it.
  Preparer* self = nullptr;
  std::vector<std::string> during;
  auto p = std::make_unique<Preparer>(
      PreparerOptions{
          .driver_name = "gpu.nvidia.com",
          .pool = "node-1",
          .cdi_dir = (dir_ / "cdi").string(),
          .checkpoint_path = (dir_ / "cp.json").string(),
          .boot_id = "boot-1",
          .proc_root = (dir_ / "proc").string(),
          .on_mig_step =
              [&](MigStep s) {
                if (s != MigStep::kUnprepareRecorded) return;
                during.push_back(
                    self->Unprepare({{"ns", "one", "u-one"}})["u-one"]);
                during.push_back(
                    self->Prepare({{"ns", "one", "u-one"}})["u-one"].error);
              }},
      reader_, &maker_);
  self = p.get();
  p->SetSources(devices_.get(), base_);
  ASSERT_TRUE(p->Start().ok());
  Claim("one", {Placement(19, 0)});
  ASSERT_EQ(Prepare(*p, "one"), "");
  EXPECT_EQ(p->Unprepare({{"ns", "one", "u-one"}})["u-one"], "");
  ASSERT_EQ(during.size(), 2u);
  EXPECT_THAT(during[0], HasSubstr("another call is destroying its MIG "
                                   "instances; the kubelet asks again"));
  EXPECT_THAT(during[1], HasSubstr("it is being unprepared"));
  EXPECT_THAT(maker_.On(kGpu), IsEmpty());
  EXPECT_THAT(Saved().claims, IsEmpty());
  // Done, the claim may come again.
  EXPECT_EQ(Prepare(*p, "one"), "");
}

TEST_F(PreparerMigTest, EveryStepIsRecordedInOrder) {
  std::vector<std::string> steps;
  auto p = std::make_unique<Preparer>(
      PreparerOptions{.driver_name = "gpu.nvidia.com",
                      .pool = "node-1",
                      .cdi_dir = (dir_ / "cdi").string(),
                      .checkpoint_path = (dir_ / "cp.json").string(),
                      .boot_id = "boot-1",
                      .proc_root = (dir_ / "proc").string(),
                      .on_mig_step =
                          [&](MigStep s) {
                            steps.push_back(MigStepName(s));
                            // What is on disk at each step.
                            absl::StatusOr<Checkpoint> c =
                                ReadCheckpoint((dir_ / "cp.json").string());
                            if (c.ok() && c->claims.contains("u-one")) {
                              steps.back() += absl::StrCat(
                                  ":",
                                  static_cast<int>(c->claims["u-one"].state));
                            }
                          }},
      reader_, &maker_);
  p->SetSources(devices_.get(), base_);
  ASSERT_TRUE(p->Start().ok());
  Claim("one", {Placement(19, 0)});
  ASSERT_EQ(Prepare(*p, "one"), "");
  ASSERT_EQ(p->Unprepare({{"ns", "one", "u-one"}})["u-one"], "");
  // 0 prepared, 1 preparing, 2 unpreparing.
  EXPECT_THAT(steps, ElementsAre("intent-recorded:1", "gi-made:1", "ci-made:1",
                                 "spec-written:1", "prepared-recorded:0",
                                 "unprepare-recorded:2", "ci-destroyed:2",
                                 "gi-destroyed:2"));
}

}  // namespace
}  // namespace gdp::dra
