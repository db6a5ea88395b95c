// Measures what preparing a share of a GPU (a result with a shareID and
// consumedCapacity: its own CDI device carrying the memory-limit hook, a
// version 2 checkpoint entry) costs against preparing a GPU whole, in one
// run: the Preparer itself (claim checks, CDI spec written, checkpoint
// written and fsynced), claims read from memory, so what differs between
// the two is all that is timed. Whole and share Prepares alternate, each
// followed by an untimed Unprepare, so both see the same disk and the same
// checkpoint size.
//
// Usage: dra_share_bench [--claims N] [--dir DIR]
// Prints p50 / p99 of each (microseconds) and share/whole per percentile.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/dra_bench_kit.h"
#include "cdi/memory_limit.h"
#include "device/device_set.h"
#include "dra/preparer.h"

namespace gdp::bench {
namespace {

int Run(int claims, const std::string& dir) {
  std::filesystem::remove_all(dir);
  std::vector<Device> gpus;
  for (unsigned i = 0; i < 8; ++i) {
    Device d;
    d.id = absl::StrCat("gpu-", i);
    d.gpu_uuid = d.visible_id =
        absl::StrCat("GPU-0000000", i, "-1111-2222-3333-444444444444");
    d.gpu_index = static_cast<int>(i);
    d.device_nodes = {absl::StrCat("/dev/nvidia", i)};
    gpus.push_back(d);
  }
  DeviceSet devices(gpus);
  auto base = std::make_shared<dra::ClaimSpecBase>();
  base->control_nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  base->memory_limit_hook = cdi::MemoryLimitHook{
      cdi::MemoryLimitHook::Kind::kOurs, "/usr/local/bin/gdp-cdi-hook", "/"};
  MapReader reader;
  dra::Preparer preparer({.driver_name = "gpu.nvidia.com",
                          .pool = "node-1",
                          .cdi_dir = dir + "/cdi",
                          .checkpoint_path = dir + "/checkpoint.json",
                          .boot_id = "boot"},
                         reader);
  preparer.SetSources(&devices, base);
  if (absl::Status s = preparer.Start(); !s.ok()) {
    std::fprintf(stderr, "dra_share_bench: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }
  std::vector<double> whole, share;
  constexpr int kWarmUp = 20;
  for (int i = 0; i < claims + kWarmUp; ++i) {
    const std::string device = absl::StrCat("gpu-", i % 8);
    for (bool shared : {false, true}) {
      dra::AllocatedClaim c;
      c.ref = {"bench", absl::StrCat(shared ? "s" : "w", i),
               absl::StrCat("0000", i, shared ? "-s" : "-w",
                            "-aaaa-bbbb-cccccccccccc")};
      dra::AllocatedDevice r{"gpu", "gpu.nvidia.com", "node-1", device};
      if (shared) {
        r.share_id = absl::StrCat("5e1c", i, "-7d2a-4c3b-9e8f-7a6b5c4d3e2f");
        r.consumed_capacity = {{"memory", uint64_t{4} << 30}};
      }
      c.results = {r};
      reader.Add(c);
      CallBudget caller;
      const absl::Time start = absl::Now();
      dra::PrepareResult out =
          preparer.Prepare(c.ref, absl::InfiniteFuture(), caller);
      const double us = absl::ToDoubleMicroseconds(absl::Now() - start);
      if (!out.error.empty() || out.devices.size() != 1 ||
          out.devices[0].share_id != r.share_id) {
        std::fprintf(stderr, "dra_share_bench: claim %s: %s\n",
                     c.ref.uid.c_str(),
                     out.error.empty() ? "wrong devices" : out.error.c_str());
        return 1;
      }
      if (i >= kWarmUp) (shared ? share : whole).push_back(us);
      std::map<std::string, std::string> gone = preparer.Unprepare({c.ref});
      if (!gone[c.ref.uid].empty()) {
        std::fprintf(stderr, "dra_share_bench: %s\n", gone[c.ref.uid].c_str());
        return 1;
      }
    }
  }
  std::filesystem::remove_all(dir);
  const double w50 = Percentile(whole, 0.5), w99 = Percentile(whole, 0.99);
  const double s50 = Percentile(share, 0.5), s99 = Percentile(share, 0.99);
  std::printf(
      "| Prepare (%d claims each, alternating) | p50 us | p99 us |\n"
      "|---|---|---|\n"
      "| whole GPU | %.1f | %.1f |\n"
      "| share (4Gi, memory-limit hook) | %.1f | %.1f |\n"
      "| share / whole | %.3f | %.3f |\n",
      claims, w50, w99, s50, s99, s50 / w50, s99 / w99);
  return 0;
}

}  // namespace
}  // namespace gdp::bench

int main(int argc, char** argv) {
  CLI::App app{"Preparing a GPU share against preparing it whole"};
  int claims = 2000;
  std::string dir = "/tmp/gdp-dra-share-bench";
  app.add_option("--claims", claims, "claims of each kind timed")
      ->check(CLI::Range(10, 1000000));
  app.add_option("--dir", dir, "scratch directory (removed)");
  CLI11_PARSE(app, argc, argv);
  return gdp::bench::Run(claims, dir);
}
