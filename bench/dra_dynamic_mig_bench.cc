// Measures DRA Prepare and Unprepare of a dynamic MIG claim (one 1g.10gb
// profile placement of an H100, made at prepare and destroyed at
// unprepare) on the fake NVML, split into the time spent in NVML (every
// MigMaker call: listing the GPU's instances, making the GPU and compute
// instances, reading the MIG device's UUID; destroying them) and our own
// (claim checks, the checkpoint written with fsync before and after
// making, mig-minors, the CDI spec). Claims are read from memory (no gRPC,
// no API server); the fake NVML's MIG state is its shared file, as in the
// daemon.
//
// Usage: dra_dynamic_mig_bench [--claims N] [--dir DIR] [--cdi-dir DIR]
//            [--fake-nvml-lib PATH] [--machines DIR]
// The checkpoint goes to --dir (on disk, as the kubelet's plugins
// directory), the CDI specs to --cdi-dir (tmpfs, as /var/run/cdi).
// Prints p50 / p99 (microseconds) of each part, and of a Prepare of a
// whole GPU (no MIG) alternating with them, as the reference for our own
// part (the same spec and checkpoint writes on the same disk).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/dra_bench_kit.h"
#include "device/device_set.h"
#include "device/mig_profiles.h"
#include "dra/dynamic_mig.h"
#include "dra/nvml_mig_maker.h"
#include "dra/preparer.h"
#include "nvml/nvml.h"
#include "nvml/runner.h"

namespace gdp::bench {
namespace {

// A MigMaker timing every call of the one it wraps (one caller at a time).
class TimedMaker final : public dra::MigMaker {
 public:
  explicit TimedMaker(dra::MigMaker& inner) : inner_(inner) {}
  absl::Duration spent = absl::ZeroDuration();

  // f(), its time added to `spent`.
  template <typename F>
  auto Time(F f) {
    const absl::Time start = absl::Now();
    auto out = f();
    spent += absl::Now() - start;
    return out;
  }

  absl::StatusOr<std::vector<dra::MigGpuInstance>> List(
      const std::string& gpu) override {
    return Time([&] { return inner_.List(gpu); });
  }
  absl::StatusOr<unsigned> CreateGpuInstance(
      const dra::MigPlacement& p) override {
    return Time([&] { return inner_.CreateGpuInstance(p); });
  }
  absl::StatusOr<unsigned> CreateComputeInstance(const dra::MigPlacement& p,
                                                 unsigned gi) override {
    return Time([&] { return inner_.CreateComputeInstance(p, gi); });
  }
  absl::StatusOr<std::string> MigUuid(const std::string& gpu, unsigned gi,
                                      unsigned ci) override {
    return Time([&] { return inner_.MigUuid(gpu, gi, ci); });
  }
  absl::Status DestroyComputeInstance(const std::string& gpu, unsigned gi,
                                      unsigned ci) override {
    return Time([&] { return inner_.DestroyComputeInstance(gpu, gi, ci); });
  }
  absl::Status DestroyGpuInstance(const std::string& gpu,
                                  unsigned gi) override {
    return Time([&] { return inner_.DestroyGpuInstance(gpu, gi); });
  }

 private:
  dra::MigMaker& inner_;
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "dra_dynamic_mig_bench: %s\n", what.c_str());
  return 1;
}

int Run(int claims, const std::string& dir, const std::string& cdi_dir,
        const std::string& lib, const std::string& machines) {
  namespace fs = std::filesystem;
  fs::remove_all(dir);
  fs::create_directories(dir + "/root/usr/lib64");
  fs::create_symlink(lib, dir + "/root/usr/lib64/libnvidia-ml.so.1");
  setenv("FAKE_NVML_MACHINE", (machines + "/hgx-h100-mig7.yaml").c_str(), 1);
  setenv("FAKE_NVML_MIG_STATE", (dir + "/mig-state").c_str(), 1);
  // mig-minors as the driver lists it: every GPU instance and compute
  // instance of GPU 0.
  fs::create_directories(dir + "/proc/driver/nvidia-caps");
  {
    std::ofstream minors(dir + "/proc/driver/nvidia-caps/mig-minors");
    minors << "config 1\nmonitor 2\n";
    for (unsigned gi = 0; gi < 15; ++gi) {
      minors << "gpu0/gi" << gi << "/access " << 3 + gi * 9 << "\n";
      for (unsigned ci = 0; ci < 8; ++ci) {
        minors << "gpu0/gi" << gi << "/ci" << ci << "/access "
               << 4 + gi * 9 + ci << "\n";
      }
    }
  }
  std::ofstream(dir + "/proc/devices")
      << "Character devices:\n  1 mem\n121 nvidia-caps\n195 nvidia\n\n"
         "Block devices:\n  8 sd\n";
  absl::StatusOr<std::unique_ptr<Nvml>> nvml = Nvml::Open(dir + "/root");
  if (!nvml.ok()) return Fail(std::string(nvml.status().message()));
  absl::StatusOr<nvmlDevice_t> gpu = (*nvml)->DeviceByIndex(0);
  absl::StatusOr<std::string> uuid =
      gpu.ok() ? (*nvml)->Uuid(*gpu) : gpu.status();
  if (!uuid.ok()) return Fail(std::string(uuid.status().message()));
  absl::StatusOr<std::vector<MigProfilePlacements>> profiles =
      ReadMigProfiles(**nvml, *gpu);
  if (!profiles.ok()) return Fail(std::string(profiles.status().message()));
  // As the daemon: a deadline on each call, so the maker's calls run on
  // the runner's worker thread.
  (*nvml)->set_call_deadline(absl::Seconds(10));
  NvmlRunner runner(**nvml);
  std::unique_ptr<dra::MigMaker> nvml_maker =
      dra::MakeNvmlMigMaker(**nvml, runner);
  TimedMaker maker(*nvml_maker);
  // GPU 0 starts empty (the machine file has seven 1g.10gb).
  absl::StatusOr<std::vector<dra::MigGpuInstance>> there = maker.List(*uuid);
  if (!there.ok()) return Fail(std::string(there.status().message()));
  for (const dra::MigGpuInstance& gi : *there) {
    for (unsigned ci : gi.ci_ids) {
      (void)maker.DestroyComputeInstance(*uuid, gi.gi_id, ci);
    }
    (void)maker.DestroyGpuInstance(*uuid, gi.gi_id);
  }

  std::vector<Device> list;
  auto base = std::make_shared<dra::ClaimSpecBase>();
  base->control_nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  std::vector<std::string> ones;  // the 1g.10gb placements
  for (const MigProfilePlacements& m : *profiles) {
    for (const nvmlGpuInstancePlacement_t& p : m.placements) {
      std::string name = m.name;
      std::erase(name, '.');
      for (char& c : name) {
        if (c == '+') c = '-';
      }
      Device d;
      d.id = absl::StrCat("gpu-0-mig-", name, "-", m.profile_id, "-", p.start);
      d.gpu_uuid = d.visible_id = *uuid;
      d.device_nodes = {"/dev/nvidia0"};
      list.push_back(d);
      base->dynamic_mig[d.id] = {*uuid,           0,       m.name, m.profile_id,
                                 m.ci_profile_id, p.start, p.size};
      if (m.name == "1g.10gb") ones.push_back(d.id);
    }
  }
  if (ones.empty()) return Fail("no 1g.10gb profile on GPU 0");
  {
    // GPU 1, given whole: the same preparer's path without MIG, timed in
    // the same run as a reference (the same disk, the same checkpoint).
    Device d;
    d.id = "gpu-1";
    d.gpu_uuid = d.visible_id = "GPU-11111111-2222-3333-4444-555555555555";
    d.gpu_index = 1;
    d.device_nodes = {"/dev/nvidia1"};
    list.push_back(d);
  }
  DeviceSet devices(list);
  MapReader reader;
  dra::Preparer preparer({.driver_name = "gpu.nvidia.com",
                          .pool = "node-1",
                          .cdi_dir = cdi_dir,
                          .checkpoint_path = dir + "/checkpoint.json",
                          .boot_id = "boot",
                          .proc_root = dir + "/proc"},
                         reader, &maker);
  preparer.SetSources(&devices, base);
  if (absl::Status s = preparer.Start(); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  std::vector<double> total, in_nvml, own, u_total, u_nvml, u_own, whole;
  constexpr int kWarmUp = 20;
  for (int i = 0; i < claims + kWarmUp; ++i) {
    dra::AllocatedClaim c;
    c.ref = {"bench", absl::StrCat("m", i),
             absl::StrCat("0000", i, "-aaaa-bbbb-cccc-dddddddddddd")};
    c.results = {{"gpu", "gpu.nvidia.com", "node-1", ones[i % ones.size()]}};
    reader.Add(c);
    CallBudget caller;
    maker.spent = absl::ZeroDuration();
    absl::Time start = absl::Now();
    dra::PrepareResult out =
        preparer.Prepare(c.ref, absl::InfiniteFuture(), caller);
    const absl::Duration took = absl::Now() - start;
    if (!out.error.empty() || out.devices.size() != 1 ||
        !out.devices[0].mig.has_value()) {
      return Fail(
          absl::StrCat("claim ", c.ref.uid, ": ",
                       out.error.empty() ? "wrong devices" : out.error));
    }
    const absl::Duration made = maker.spent;
    maker.spent = absl::ZeroDuration();
    start = absl::Now();
    std::map<std::string, std::string> gone = preparer.Unprepare({c.ref});
    const absl::Duration undone = absl::Now() - start;
    if (!gone[c.ref.uid].empty()) return Fail(gone[c.ref.uid]);
    // The whole GPU, alternating.
    dra::AllocatedClaim w;
    w.ref = {"bench", absl::StrCat("w", i),
             absl::StrCat("1111", i, "-aaaa-bbbb-cccc-dddddddddddd")};
    w.results = {{"gpu", "gpu.nvidia.com", "node-1", "gpu-1"}};
    reader.Add(w);
    start = absl::Now();
    out = preparer.Prepare(w.ref, absl::InfiniteFuture(), caller);
    const absl::Duration whole_took = absl::Now() - start;
    if (!out.error.empty()) return Fail(out.error);
    if (std::string e = preparer.Unprepare({w.ref})[w.ref.uid]; !e.empty()) {
      return Fail(e);
    }
    if (i < kWarmUp) continue;
    whole.push_back(absl::ToDoubleMicroseconds(whole_took));
    total.push_back(absl::ToDoubleMicroseconds(took));
    in_nvml.push_back(absl::ToDoubleMicroseconds(made));
    own.push_back(absl::ToDoubleMicroseconds(took - made));
    u_total.push_back(absl::ToDoubleMicroseconds(undone));
    u_nvml.push_back(absl::ToDoubleMicroseconds(maker.spent));
    u_own.push_back(absl::ToDoubleMicroseconds(undone - maker.spent));
  }
  fs::remove_all(dir);
  fs::remove_all(cdi_dir);
  std::printf(
      "| %d claims, one 1g.10gb each | p50 us | p99 us |\n"
      "|---|---|---|\n"
      "| Prepare, total | %.1f | %.1f |\n"
      "| Prepare, in NVML (list, make GI and CI, read the UUID) | %.1f | %.1f "
      "|\n"
      "| Prepare, our own (total less NVML) | %.1f | %.1f |\n"
      "| Unprepare, total | %.1f | %.1f |\n"
      "| Unprepare, in NVML (list, destroy CI and GI) | %.1f | %.1f |\n"
      "| Unprepare, our own | %.1f | %.1f |\n"
      "| Prepare of a whole GPU, no MIG (same run, alternating) | %.1f | "
      "%.1f |\n",
      claims, Percentile(total, 0.5), Percentile(total, 0.99),
      Percentile(in_nvml, 0.5), Percentile(in_nvml, 0.99), Percentile(own, 0.5),
      Percentile(own, 0.99), Percentile(u_total, 0.5),
      Percentile(u_total, 0.99), Percentile(u_nvml, 0.5),
      Percentile(u_nvml, 0.99), Percentile(u_own, 0.5), Percentile(u_own, 0.99),
      Percentile(whole, 0.5), Percentile(whole, 0.99));
  return 0;
}

}  // namespace
}  // namespace gdp::bench

int main(int argc, char** argv) {
  CLI::App app{"DRA Prepare of a dynamic MIG claim on the fake NVML"};
  int claims = 2000;
  std::string dir = "/tmp/gdp-dra-dynamic-mig-bench";
  std::string lib = GDP_FAKE_NVML_LIB;
  std::string machines = GDP_MACHINES_DIR;
  app.add_option("--claims", claims, "claims timed")
      ->check(CLI::Range(10, 1000000));
  std::string cdi_dir = "/dev/shm/gdp-dra-dynamic-mig-bench-cdi";
  app.add_option("--dir", dir,
                 "scratch directory for the checkpoint (removed; on disk, as "
                 "the kubelet's plugins directory)");
  app.add_option("--cdi-dir", cdi_dir,
                 "where claim CDI specs go (removed; tmpfs, as /var/run/cdi)");
  app.add_option("--fake-nvml-lib", lib, "the fake libnvidia-ml.so.1");
  app.add_option("--machines", machines, "the fake NVML's machine files");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);  // a line per claim otherwise
  return gdp::bench::Run(claims, dir, cdi_dir, lib, machines);
}
