// Dynamic MIG devices prepared and unprepared for real on the fake NVML
// (its MIG state shared by file between processes, as a driver's is between
// nvidia-smi and the plugin), each prepare, unprepare and restart of the
// plugin in a process of its own:
//  - claims allocated as the scheduler allocates partitionable devices
//    (first fit, a placement only while its memory slices and the GPU's
//    multiprocessors counter have room, from the profiles NVML reports),
//    mixes of profiles until the GPU is full, the fake holding exactly the
//    allocated instances after each step;
//  - the plugin killed (SIGKILL) at every step of a prepare and of an
//    unprepare, then started again: the fake then holds exactly the
//    instances of the prepared claims: none leaked, none destroyed under a
//    claim still prepared (its compute instance busy, as under a running
//    pod), and an instance made by someone else left alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "device/device_set.h"
#include "device/mig_profiles.h"
#include "dra/checkpoint.h"
#include "dra/claim_edits.h"
#include "dra/dynamic_mig.h"
#include "dra/nvml_mig_maker.h"
#include "dra/preparer.h"
#include "nvml/nvml.h"
#include "nvml/runner.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"
#include "util/file_watcher.h"

namespace gdp::dra {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr absl::Duration kTimeout = absl::Seconds(30);
constexpr char kMachine[] = "hgx-h100-mig7";
constexpr char kGpu0[] = "GPU-5c0a0000-1b2c-3d4e-8f50-6a7b8c9d0e00";

// A profile of GPU 0 as NVML reports it.
struct Profile {
  std::string name;
  unsigned id = 0, ci_id = 0, multiprocessors = 0;
  std::vector<std::pair<unsigned, unsigned>> placements;  // start, size
};

// The name NVIDIA's driver gives a placement device.
std::string DeviceName(const std::string& profile, unsigned id,
                       unsigned start) {
  std::string p = profile;
  std::erase(p, '.');
  for (char& c : p) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) c = '-';
  }
  return absl::StrCat("gpu-0-mig-", p, "-", id, "-", start);
}

class DynamicMigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "root/usr/lib64");
    fs::create_symlink(GDP_FAKE_NVML_LIB,
                       dir_ / "root/usr/lib64/libnvidia-ml.so.1");
    setenv("FAKE_NVML_MACHINE",
           absl::StrCat(GDP_MACHINES_DIR, "/", kMachine, ".yaml").c_str(), 1);
    setenv("FAKE_NVML_MIG_STATE", (dir_ / "mig-state").c_str(), 1);
    // Capability minors: GPU instance g 1000 + g, its compute instance c
    // 2000 + 10 g + c.
    std::string minors = "config 1\nmonitor 2\n";
    for (unsigned gi = 0; gi < 15; ++gi) {
      absl::StrAppend(&minors, "gpu0/gi", gi, "/access ", 1000 + gi, "\n");
      for (unsigned ci = 0; ci < 8; ++ci) {
        absl::StrAppend(&minors, "gpu0/gi", gi, "/ci", ci, "/access ",
                        2000 + 10 * gi + ci, "\n");
      }
    }
    fs::create_directories(dir_ / "proc/driver/nvidia-caps");
    std::ofstream(dir_ / "proc/driver/nvidia-caps/mig-minors") << minors;
    std::ofstream(dir_ / "proc/devices")
        << "Character devices:\n  1 mem\n121 nvidia-caps\n195 nvidia\n\n"
           "Block devices:\n  8 sd\n";
    // GPU 0 starts with no instance (the machine file has seven 1g.10gb).
    Tool({"--dci"});
    Tool({"--dgi"});
    ASSERT_THAT(Instances(), IsEmpty());
    ReadProfiles();
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_MACHINE");
    unsetenv("FAKE_NVML_MIG_STATE");
  }

  // `fake-nvml mig -i 0 ARGS`: its output.
  std::string Tool(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        GDP_FAKE_NVML_TOOL,
        "mig",
        "--machine",
        absl::StrCat(GDP_MACHINES_DIR, "/", kMachine, ".yaml"),
        "--state",
        (dir_ / "mig-state").string(),
        "-i",
        "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    gdp::testing::Subprocess p({.argv = argv});
    std::string out;
    while (auto line = p.ReadLine(kTimeout)) out += *line + "\n";
    EXPECT_EQ(p.Wait(kTimeout).value_or(-1), 0)
        << absl::StrJoin(args, " ") << ": " << out << p.Stderr();
    return out;
  }

  // GPU 0's instances as `fake-nvml mig --lgi/--lci` lists them:
  // "<profile>@<start>" for a GPU instance with one compute instance,
  // "<profile>@<start>/no-ci" without.
  std::set<std::string> Instances() {
    std::map<std::string, std::string> by_gi;  // GI ID -> profile@start
    for (absl::string_view line :
         absl::StrSplit(Tool({"--lgi"}), '\n', absl::SkipEmpty())) {
      // gpu 0 gi 2 profile 3g.40gb id 9 placement 4:4
      std::vector<std::string> w = absl::StrSplit(line, ' ');
      if (w.size() < 10) continue;
      by_gi[w[3]] = absl::StrCat(
          w[5], "@", std::vector<std::string>(absl::StrSplit(w[9], ':'))[0]);
    }
    std::set<std::string> with_ci;
    for (absl::string_view line :
         absl::StrSplit(Tool({"--lci"}), '\n', absl::SkipEmpty())) {
      std::vector<std::string> w = absl::StrSplit(line, ' ');
      if (w.size() > 3) with_ci.insert(w[3]);
    }
    std::set<std::string> out;
    for (const auto& [gi, what] : by_gi) {
      out.insert(with_ci.contains(gi) ? what : what + "/no-ci");
    }
    return out;
  }

  // Runs `body` in a child process, its log in `log` (appended); returns
  // its wait status.
  int InChild(const std::function<int()>& body, const std::string& log) {
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
      FILE* f = fopen(log.c_str(), "a");
      if (f != nullptr) {
        dup2(fileno(f), 1);
        dup2(fileno(f), 2);
      }
      _exit(body());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  }

  // The plugin's MIG side in this (child) process: NVML on the fake, a
  // preparer on the test's checkpoint over every placement of GPU 0.
  struct Plugin {
    std::unique_ptr<Nvml> nvml;
    std::unique_ptr<NvmlRunner> runner;
    std::unique_ptr<MigMaker> maker;
    std::unique_ptr<DeviceSet> devices;
    std::unique_ptr<Preparer> preparer;
  };
  std::unique_ptr<Plugin> Start(std::function<void(MigStep)> on_step = {}) {
    auto p = std::make_unique<Plugin>();
    absl::StatusOr<std::unique_ptr<Nvml>> nvml =
        Nvml::Open((dir_ / "root").string());
    if (!nvml.ok()) {
      fprintf(stderr, "NVML: %s\n",
              std::string(nvml.status().message()).c_str());
      return nullptr;
    }
    p->nvml = *std::move(nvml);
    p->runner = std::make_unique<NvmlRunner>(*p->nvml);
    p->maker = MakeNvmlMigMaker(*p->nvml, *p->runner);
    auto base = std::make_shared<ClaimSpecBase>();
    base->control_nodes = {"/dev/nvidiactl"};
    std::vector<Device> devices;
    for (const Profile& prof : profiles_) {
      for (const auto& [start, size] : prof.placements) {
        Device d;
        d.id = DeviceName(prof.name, prof.id, start);
        d.visible_id = kGpu0;
        d.gpu_uuid = kGpu0;
        d.device_nodes = {"/dev/nvidia0"};
        devices.push_back(d);
        base->dynamic_mig[d.id] = {kGpu0,      0,     prof.name, prof.id,
                                   prof.ci_id, start, size};
      }
    }
    p->devices = std::make_unique<DeviceSet>(std::move(devices));
    p->preparer = std::make_unique<Preparer>(
        PreparerOptions{.driver_name = "gpu.nvidia.com",
                        .pool = "node-1",
                        .cdi_dir = (dir_ / "cdi").string(),
                        .checkpoint_path = (dir_ / "cp.json").string(),
                        .boot_id = "boot-1",
                        .proc_root = (dir_ / "proc").string(),
                        .on_mig_step = std::move(on_step)},
        reader_, p->maker.get());
    p->preparer->SetSources(p->devices.get(), base);
    if (absl::Status s = p->preparer->Start(); !s.ok()) {
      fprintf(stderr, "Start: %s\n", std::string(s.message()).c_str());
      return nullptr;
    }
    return p;
  }

  // Reads GPU 0's profiles through NVML (in a child: this process never
  // loads NVML, so its children start clean).
  void ReadProfiles() {
    const std::string out = (dir_ / "profiles.txt").string();
    const int status = InChild(
        [&] {
          auto nvml = Nvml::Open((dir_ / "root").string());
          if (!nvml.ok()) return 1;
          auto gpu = (*nvml)->DeviceByIndex(0);
          auto profiles = ReadMigProfiles(**nvml, *gpu);
          if (!profiles.ok()) return 2;
          std::ofstream f(out);
          for (const MigProfilePlacements& m : *profiles) {
            f << m.name << " " << m.profile_id << " " << m.ci_profile_id << " "
              << m.multiprocessors;
            for (const nvmlGpuInstancePlacement_t& pl : m.placements) {
              f << " " << pl.start << ":" << pl.size;
            }
            f << "\n";
          }
          return 0;
        },
        (dir_ / "log").string());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << ReadFileOrEmpty((dir_ / "log").string());
    for (absl::string_view line :
         absl::StrSplit(ReadFileOrEmpty(out), '\n', absl::SkipEmpty())) {
      std::vector<std::string> w = absl::StrSplit(line, ' ');
      Profile p{w[0], 0, 0, 0, {}};
      ASSERT_TRUE(absl::SimpleAtoi(w[1], &p.id));
      ASSERT_TRUE(absl::SimpleAtoi(w[2], &p.ci_id));
      ASSERT_TRUE(absl::SimpleAtoi(w[3], &p.multiprocessors));
      for (size_t i = 4; i < w.size(); ++i) {
        std::vector<std::string> se = absl::StrSplit(w[i], ':');
        unsigned s = 0, z = 0;
        ASSERT_TRUE(absl::SimpleAtoi(se[0], &s) && absl::SimpleAtoi(se[1], &z));
        p.placements.emplace_back(s, z);
      }
      multiprocessors_ = std::max(multiprocessors_, p.multiprocessors);
      profiles_.push_back(std::move(p));
    }
    ASSERT_FALSE(profiles_.empty());
  }

  const Profile& ProfileNamed(const std::string& name) {
    for (const Profile& p : profiles_) {
      if (p.name == name) return p;
    }
    ADD_FAILURE() << "no profile " << name;
    return profiles_.front();
  }

  // What the scheduler does with a claim for one device of `profile`: the
  // first placement whose memory slices are free while the GPU's
  // multiprocessors counter has room (KEP-4815 counters as NVIDIA
  // publishes them). Allocates it (the claim `name`, UID "u-<name>") and
  // returns "<profile>@<start>", or "" when none fits.
  std::string Allocate(const std::string& name, const std::string& profile) {
    const Profile& p = ProfileNamed(profile);
    unsigned used_sm = 0;
    std::set<unsigned> used_slices;
    for (const auto& [claim, a] : allocated_) {
      used_sm += a.sm;
      for (unsigned s = a.start; s < a.start + a.size; ++s) {
        used_slices.insert(s);
      }
    }
    if (used_sm + p.multiprocessors > multiprocessors_) return "";
    for (const auto& [start, size] : p.placements) {
      bool free = true;
      for (unsigned s = start; s < start + size; ++s) {
        free &= !used_slices.contains(s);
      }
      if (!free) continue;
      allocated_[name] = {p.name, start, size, p.multiprocessors};
      AllocatedClaim c;
      c.ref = {"ns", name, "u-" + name};
      c.results = {
          {"gpu", "gpu.nvidia.com", "node-1", DeviceName(p.name, p.id, start)}};
      reader_.claims["ns/" + name] = c;
      return absl::StrCat(p.name, "@", start);
    }
    return "";
  }

  // What the fake must hold for the claims allocated now.
  std::set<std::string> Expected() {
    std::set<std::string> out = foreign_;
    for (const auto& [claim, a] : allocated_) {
      out.insert(absl::StrCat(a.profile, "@", a.start));
    }
    return out;
  }

  // Prepares or unprepares claim `name` in a plugin process of its own,
  // which is killed at `kill_at` when given. Returns the claim's error
  // ("" on success), or "killed" when the process was killed.
  std::string Call(bool prepare, const std::string& name,
                   std::optional<MigStep> kill_at = std::nullopt) {
    const std::string out = (dir_ / "answer.txt").string();
    fs::remove(out);
    const int status = InChild(
        [&] {
          auto p = Start([kill_at](MigStep s) {
            if (kill_at.has_value() && s == *kill_at) raise(SIGKILL);
          });
          if (p == nullptr) return 1;
          const ClaimRef ref{"ns", name, "u-" + name};
          std::string error =
              prepare
                  ? p->preparer->Prepare(std::vector<ClaimRef>{ref})[ref.uid]
                        .error
                  : p->preparer->Unprepare({ref})[ref.uid];
          std::ofstream(out) << error;
          return 0;
        },
        (dir_ / "log").string());
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) return "killed";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << ReadFileOrEmpty((dir_ / "log").string());
    return ReadFileOrEmpty(out);
  }

  // Starts the plugin in a process of its own (the restart after a kill)
  // and returns what it logged.
  std::string Restart() {
    const std::string log = (dir_ / "restart.log").string();
    fs::remove(log);
    const int status = InChild([&] { return Start() == nullptr ? 1 : 0; }, log);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << ReadFileOrEmpty(log);
    return ReadFileOrEmpty(log);
  }

  // The claims recorded, by UID, with their state.
  std::map<std::string, ClaimState> Recorded() {
    std::map<std::string, ClaimState> out;
    absl::StatusOr<Checkpoint> c = ReadCheckpoint((dir_ / "cp.json").string());
    if (!c.ok()) return out;
    for (const auto& [uid, claim] : c->claims) out[uid] = claim.state;
    return out;
  }

  struct Allocation {
    std::string profile;
    unsigned start = 0, size = 0, sm = 0;
  };

  const gdp::testing::TempDir tmp_{"dynamic-mig"};
  const fs::path dir_ = tmp_.path();
  std::vector<Profile> profiles_;
  unsigned multiprocessors_ = 0;                 // the GPU's counter
  std::map<std::string, Allocation> allocated_;  // by claim name
  std::set<std::string> foreign_;  // instances made by someone else
  // Claims by "<namespace>/<name>", read by the plugin processes (forked
  // after they are set).
  class Reader final : public ClaimReader {
   public:
    absl::StatusOr<AllocatedClaim> Read(const ClaimRef& ref, absl::Time,
                                        CallBudget&) override {
      auto it = claims.find(ref.ns + "/" + ref.name);
      if (it == claims.end()) return absl::NotFoundError("no such claim");
      return it->second;
    }
    std::map<std::string, AllocatedClaim> claims;
  } reader_;
};

TEST_F(DynamicMigTest, MixesOfProfilesUntilTheGpuIsFull) {
  // 3g.40gb, 2g.20gb and 1g.10gb fill the memory slices; a fourth fits
  // nowhere, as the scheduler would find.
  EXPECT_EQ(Allocate("a", "3g.40gb"), "3g.40gb@0");
  EXPECT_EQ(Allocate("b", "2g.20gb"), "2g.20gb@4");
  EXPECT_EQ(Allocate("c", "1g.10gb"), "1g.10gb@6");
  EXPECT_EQ(Allocate("d", "1g.10gb"), "");
  for (const char* c : {"a", "b", "c"}) ASSERT_EQ(Call(true, c), "") << c;
  EXPECT_EQ(Instances(), Expected());
  // The 2g.20gb goes; two 1g.10gb take its slices.
  ASSERT_EQ(Call(false, "b"), "");
  allocated_.erase("b");
  EXPECT_EQ(Instances(), Expected());
  EXPECT_EQ(Allocate("d", "1g.10gb"), "1g.10gb@4");
  EXPECT_EQ(Allocate("e", "1g.10gb"), "1g.10gb@5");
  for (const char* c : {"d", "e"}) ASSERT_EQ(Call(true, c), "") << c;
  EXPECT_EQ(Instances(), Expected());
  EXPECT_EQ(Allocate("f", "1g.10gb"), "");
  // Everything goes; a 7g.80gb takes the whole GPU, then nothing fits.
  for (const char* c : {"a", "c", "d", "e"}) {
    ASSERT_EQ(Call(false, c), "") << c;
    allocated_.erase(c);
  }
  EXPECT_THAT(Instances(), IsEmpty());
  EXPECT_EQ(Allocate("g", "7g.80gb"), "7g.80gb@0");
  ASSERT_EQ(Call(true, "g"), "");
  EXPECT_EQ(Instances(), Expected());
  EXPECT_EQ(Allocate("h", "1g.10gb"), "");
  ASSERT_EQ(Call(false, "g"), "");
  allocated_.erase("g");
  // Seven 1g.10gb, then none.
  for (int i = 0; i < 7; ++i) {
    const std::string c = absl::StrCat("one-", i);
    EXPECT_EQ(Allocate(c, "1g.10gb"), absl::StrCat("1g.10gb@", i));
    ASSERT_EQ(Call(true, c), "") << c;
  }
  EXPECT_EQ(Allocate("one-7", "1g.10gb"), "");
  EXPECT_EQ(Instances(), Expected());
  EXPECT_EQ(Recorded().size(), 7u);
}

TEST_F(DynamicMigTest, KilledAtEveryStepThenRestartedHoldsExactlyThePrepared) {
  // A claim prepared before, its compute instance busy (a running pod),
  // and an instance made by someone else: both must survive every restart.
  ASSERT_EQ(Allocate("keep", "1g.10gb"), "1g.10gb@0");
  ASSERT_EQ(Call(true, "keep"), "");
  Tool({"--busy", "--gi", "7"});       // 1g.10gb at 0 is GPU instance 7
  Tool({"--cgi", "1g.10gb:3", "-C"});  // GPU instance 10
  foreign_ = {"1g.10gb@3"};
  ASSERT_EQ(Instances(), Expected());
  // The victim: two devices, so a kill can fall between them.
  ASSERT_EQ(Allocate("v1", "3g.40gb"), "3g.40gb@4");
  ASSERT_EQ(Allocate("v2", "1g.10gb"), "1g.10gb@1");
  AllocatedClaim victim;
  victim.ref = {"ns", "victim", "u-victim"};
  victim.results = {reader_.claims["ns/v1"].results[0],
                    reader_.claims["ns/v2"].results[0]};
  victim.results[1].request = "gpu2";
  reader_.claims["ns/victim"] = victim;
  std::map<std::string, Allocation> keep_only = {{"keep", allocated_["keep"]}};
  std::map<std::string, Allocation> with_victim = allocated_;
  allocated_ = keep_only;

  const MigStep kPrepareSteps[] = {
      MigStep::kIntentRecorded, MigStep::kGpuInstanceMade,
      MigStep::kComputeInstanceMade, MigStep::kSpecWritten,
      MigStep::kPreparedRecorded};
  for (MigStep step : kPrepareSteps) {
    SCOPED_TRACE(absl::StrCat("prepare killed at ", MigStepName(step)));
    allocated_ = keep_only;
    ASSERT_EQ(Instances(), Expected());
    ASSERT_EQ(Call(true, "victim", step), "killed");
    const std::string log = Restart();
    if (step == MigStep::kPreparedRecorded) {
      // Recorded prepared before the kill: the kubelet may have its
      // answer; its instances are adopted.
      allocated_ = with_victim;
      EXPECT_THAT(log, HasSubstr("of claim ns/victim (u-victim): adopted"));
      EXPECT_EQ(Recorded()["u-victim"], ClaimState::kPrepared);
    } else {
      EXPECT_FALSE(Recorded().contains("u-victim"));
      if (step != MigStep::kIntentRecorded) {
        EXPECT_THAT(log, HasSubstr("of claim ns/victim (u-victim): removed "
                                   "(its prepare was cut short)"));
      }
    }
    EXPECT_THAT(log, HasSubstr("of claim ns/keep (u-keep): adopted"));
    EXPECT_THAT(log, HasSubstr("GPU instance 10 (profile ID 19, memory slices "
                               "3-3) is in no prepared claim of this driver: "
                               "not made by it, left alone"));
    EXPECT_EQ(Instances(), Expected());
    EXPECT_EQ(Recorded()["u-keep"], ClaimState::kPrepared);
    // The kubelet asks again: prepared (or answered from the checkpoint).
    ASSERT_EQ(Call(true, "victim"), "");
    allocated_ = with_victim;
    EXPECT_EQ(Instances(), Expected());
    // And unprepares it, for the next round.
    ASSERT_EQ(Call(false, "victim"), "");
  }

  const MigStep kUnprepareSteps[] = {MigStep::kUnprepareRecorded,
                                     MigStep::kComputeInstanceDestroyed,
                                     MigStep::kGpuInstanceDestroyed};
  for (MigStep step : kUnprepareSteps) {
    SCOPED_TRACE(absl::StrCat("unprepare killed at ", MigStepName(step)));
    ASSERT_EQ(Call(true, "victim"), "");
    allocated_ = with_victim;
    ASSERT_EQ(Instances(), Expected());
    ASSERT_EQ(Call(false, "victim", step), "killed");
    const std::string log = Restart();
    allocated_ = keep_only;
    EXPECT_EQ(Instances(), Expected());
    EXPECT_FALSE(Recorded().contains("u-victim"));
    if (step != MigStep::kGpuInstanceDestroyed) {
      EXPECT_THAT(log, HasSubstr("of claim ns/victim (u-victim): removed "
                                 "(its unprepare was cut short)"));
    }
    // The kubelet's unprepare again: nothing left to do.
    EXPECT_EQ(Call(false, "victim"), "");
  }

  // The busy claim cannot be destroyed under its pod; once idle it goes.
  EXPECT_THAT(Call(false, "keep"), HasSubstr("destroying its MIG instances"));
  EXPECT_EQ(Recorded()["u-keep"], ClaimState::kUnpreparing);
  EXPECT_EQ(Instances(), Expected());
  Tool({"--idle", "--gi", "7"});
  EXPECT_EQ(Call(false, "keep"), "");
  allocated_.clear();
  EXPECT_EQ(Instances(), Expected());  // the foreign instance only
  EXPECT_THAT(Recorded(), IsEmpty());
}

}  // namespace
}  // namespace gdp::dra
