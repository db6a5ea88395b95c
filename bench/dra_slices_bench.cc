// Measures the ResourceSlices of an 8-GPU H100 node (the fake NVML's
// hgx-h100-mig7: 8 H100s in MIG mode, seven 1g.10gb each) as the DRA side
// publishes them, with NVIDIA's DynamicMIG gate (every GPU partitionable:
// its counter set and every profile placement) and without
// it (the 56 MIG devices that exist):
//  - what is published: slices, devices and counter sets, each slice's
//    JSON size;
//  - building it: discovery with and without the MIG profiles, the
//    inventory, the slices and their JSON (in-process, microseconds);
//  - publishing it to the API server emulator as Kubernetes 1.36
//    (tests/kube/apiserver.py, HTTPS on loopback): a whole publication of a
//    new pool (list, then a create per slice), and a taint set on one GPU's
//    devices then cleared (one slice updated in place); milliseconds.
// Usage: dra_slices_bench [--rounds N] [--dir DIR] [--fake-nvml-lib PATH]
//            [--machines DIR] [--apiserver PY]
// Prints Markdown tables for bench/RESULTS.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/dra_bench_kit.h"
#include "device/gpu.h"
#include "dra/inventory.h"
#include "dra/publisher.h"
#include "dra/slice_json.h"
#include "dra/slices.h"
#include "kube/client.h"
#include "kube/config.h"
#include "nvml/nvml.h"
#include "testing/subprocess.h"

namespace gdp::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kDriver[] = "gpu.nvidia.com";

int Fail(const std::string& what) {
  std::fprintf(stderr, "dra_slices_bench: %s\n", what.c_str());
  return 1;
}

// Microseconds of f(), the median of `n` runs.
template <typename F>
double MedianMicros(int n, F f) {
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    const absl::Time start = absl::Now();
    f();
    t.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  return Percentile(t, 0.5);
}

struct Shape {
  size_t slices = 0, counter_slices = 0, devices = 0, counter_sets = 0;
  size_t max_devices = 0;                 // in one slice
  size_t total_bytes = 0, max_bytes = 0;  // of the slices' JSON
};

Shape ShapeOf(const std::vector<dra::DraDevice>& inventory) {
  std::vector<dra::SliceContent> cut = dra::CutIntoSlices(
      dra::SliceDevices(inventory, {}, kDriver, false), dra::SliceLimits{});
  Shape s;
  s.slices = cut.size();
  for (const dra::SliceContent& c : cut) {
    dra::SliceObject o;
    o.name = "node-1-gpu.nvidia.com-abcde";
    o.driver = kDriver;
    o.node_name = "node-1";
    o.generation = 1;
    o.slice_count = static_cast<int64_t>(cut.size());
    o.devices = c.devices;
    o.counter_sets = c.counter_sets;
    const size_t bytes = dra::SliceJson(o, {"node-1", "uid"}, {}).dump().size();
    s.total_bytes += bytes;
    s.max_bytes = std::max(s.max_bytes, bytes);
    s.devices += c.devices.size();
    s.counter_sets += c.counter_sets.size();
    if (!c.counter_sets.empty()) ++s.counter_slices;
    s.max_devices = std::max(s.max_devices, c.devices.size());
  }
  return s;
}

struct Publishing {
  std::vector<double> whole_ms, in_place_ms;
};

// Publishes `devices` as the pools of `rounds` new nodes (a whole
// publication each), then sets and clears a taint on the devices of the
// GPU whose counter set (or device name) is `gpu`'s, `rounds` times.
absl::StatusOr<Publishing> Publish(kube::Client& test_api,
                                   const kube::ClientConfig& config,
                                   const std::vector<dra::SliceDevice>& devices,
                                   const std::string& tag, int rounds) {
  Publishing out;
  kube::RetryPolicy retry;
  retry.deadline = absl::Seconds(10);
  // The client outlives the publisher using it.
  std::unique_ptr<kube::Client> api;
  std::unique_ptr<dra::SlicePublisher> publisher;
  auto in_sync = [&](absl::Duration limit) {
    const absl::Time deadline = absl::Now() + limit;
    while (absl::Now() < deadline) {
      publisher->Step(absl::Milliseconds(20));
      if (publisher->status().in_sync) return true;
    }
    return false;
  };
  for (int r = 0; r < rounds; ++r) {
    const std::string node = absl::StrCat(tag, "-", r);
    absl::StatusOr<json> made =
        test_api.Create("/api/v1/nodes", {{"apiVersion", "v1"},
                                          {"kind", "Node"},
                                          {"metadata", {{"name", node}}}});
    if (!made.ok()) return made.status();
    absl::StatusOr<std::unique_ptr<kube::Client>> client =
        kube::Client::Create(config, retry);
    if (!client.ok()) return client.status();
    publisher.reset();
    api = *std::move(client);
    dra::PublisherOptions o;
    o.driver_name = kDriver;
    o.node_name = node;
    publisher = std::make_unique<dra::SlicePublisher>(*api, o);
    const absl::Time start = absl::Now();
    publisher->SetDevices(devices);
    if (!in_sync(absl::Seconds(30))) {
      return absl::DeadlineExceededError(
          absl::StrCat("not published: ", publisher->status().last_error));
    }
    out.whole_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
  }
  // The first GPU's devices: those consuming its counter set, else gpu-0.
  std::vector<dra::SliceDevice> tainted = devices;
  const std::string set =
      devices.empty() || devices[0].consumes_counters.empty()
          ? ""
          : devices[0].consumes_counters[0].counter_set;
  for (dra::SliceDevice& d : tainted) {
    const bool of_gpu = set.empty()
                            ? d.name.rfind("gpu-0", 0) == 0
                            : !d.consumes_counters.empty() &&
                                  d.consumes_counters[0].counter_set == set;
    if (of_gpu) d.taints.push_back({"gpu.nvidia.com/xid", "79", "NoSchedule"});
  }
  for (int r = 0; r < rounds; ++r) {
    const absl::Time start = absl::Now();
    publisher->SetDevices(r % 2 == 0 ? tainted : devices);
    if (!in_sync(absl::Seconds(30))) {
      return absl::DeadlineExceededError(absl::StrCat(
          "taint not published: ", publisher->status().last_error));
    }
    out.in_place_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
  }
  return out;
}

int Run(int rounds, const std::string& dir, const std::string& lib,
        const std::string& machines, const std::string& apiserver) {
  fs::remove_all(dir);
  fs::create_directories(dir + "/root/usr/lib64");
  fs::create_symlink(lib, dir + "/root/usr/lib64/libnvidia-ml.so.1");
  setenv("FAKE_NVML_MACHINE", (machines + "/hgx-h100-mig7.yaml").c_str(), 1);
  setenv("FAKE_NVML_MIG_STATE", (dir + "/mig-state").c_str(), 1);
  fs::create_directories(dir + "/proc/driver/nvidia-caps");
  {
    // mig-minors as the driver lists it, for the MIG devices that exist.
    std::FILE* f =
        std::fopen((dir + "/proc/driver/nvidia-caps/mig-minors").c_str(), "w");
    if (f == nullptr) return Fail("cannot write mig-minors");
    std::fprintf(f, "config 1\nmonitor 2\n");
    for (unsigned g = 0; g < 8; ++g) {
      for (unsigned gi = 0; gi < 15; ++gi) {
        const unsigned base = 3 + (g * 15 + gi) * 9;
        std::fprintf(f, "gpu%u/gi%u/access %u\n", g, gi, base);
        for (unsigned ci = 0; ci < 8; ++ci) {
          std::fprintf(f, "gpu%u/gi%u/ci%u/access %u\n", g, gi, ci,
                       base + 1 + ci);
        }
      }
    }
    std::fclose(f);
  }
  absl::StatusOr<MigCaps> caps = MigCaps::Read(dir + "/proc");
  if (!caps.ok()) return Fail(std::string(caps.status().message()));
  absl::StatusOr<std::unique_ptr<Nvml>> nvml = Nvml::Open(dir + "/root");
  if (!nvml.ok()) return Fail(std::string(nvml.status().message()));
  const std::string sysfs = dir + "/sys";
  DiscoverOptions with_profiles;
  with_profiles.mig_profiles = true;
  absl::StatusOr<NodeGpus> node =
      DiscoverGpus(**nvml, sysfs, nullptr, with_profiles);
  if (!node.ok()) return Fail(std::string(node.status().message()));
  const double discover_us =
      MedianMicros(20, [&] { (void)DiscoverGpus(**nvml, sysfs); });
  const double discover_profiles_us = MedianMicros(
      20, [&] { (void)DiscoverGpus(**nvml, sysfs, nullptr, with_profiles); });

  dra::InventoryOptions dynamic;
  dynamic.dynamic_mig = true;
  const dra::InventoryOptions fixed;
  absl::StatusOr<std::vector<dra::DraDevice>> dyn =
      dra::BuildInventory(*node, nullptr, &*caps, dynamic);
  absl::StatusOr<std::vector<dra::DraDevice>> stat =
      dra::BuildInventory(*node, nullptr, &*caps, fixed);
  if (!dyn.ok()) return Fail(std::string(dyn.status().message()));
  if (!stat.ok()) return Fail(std::string(stat.status().message()));
  auto build_us = [&](const dra::InventoryOptions& o) {
    return MedianMicros(
        200, [&] { (void)dra::BuildInventory(*node, nullptr, &*caps, o); });
  };
  auto cut_us = [&](const std::vector<dra::DraDevice>& inv) {
    return MedianMicros(200, [&] { (void)ShapeOf(inv); });
  };
  const Shape dyn_shape = ShapeOf(*dyn), stat_shape = ShapeOf(*stat);

  // The emulator as Kubernetes 1.36.
  fs::create_directories(dir + "/api");
  testing::Subprocess server(
      testing::SpawnOptions{.argv = {"/usr/bin/python3", apiserver, "--dir",
                                     dir + "/api", "--kube-version", "1.36"},
                            .stderr_path = dir + "/api.err"});
  if (!server.ReadLine(absl::Seconds(30)).has_value()) {
    return Fail(absl::StrCat("the emulator did not start: ", server.Stderr()));
  }
  absl::StatusOr<kube::ClientConfig> config =
      kube::LoadKubeconfig(dir + "/api/kubeconfig");
  if (!config.ok()) return Fail(std::string(config.status().message()));
  absl::StatusOr<std::unique_ptr<kube::Client>> test_api =
      kube::Client::Create(*config, kube::RetryPolicy{});
  if (!test_api.ok()) return Fail(std::string(test_api.status().message()));
  absl::StatusOr<Publishing> pub_dyn =
      Publish(**test_api, *config, dra::SliceDevices(*dyn, {}, kDriver, false),
              "dyn", rounds);
  if (!pub_dyn.ok()) return Fail(std::string(pub_dyn.status().message()));
  absl::StatusOr<Publishing> pub_stat =
      Publish(**test_api, *config, dra::SliceDevices(*stat, {}, kDriver, false),
              "static", rounds);
  if (!pub_stat.ok()) return Fail(std::string(pub_stat.status().message()));
  absl::StatusOr<json> violations = (*test_api)->Get("/emulator/violations");
  if (!violations.ok() || !violations->empty()) {
    return Fail(absl::StrCat(
        "the emulator refused writes: ",
        violations.ok() ? violations->dump() : violations.status().ToString()));
  }
  absl::StatusOr<json> pools = (*test_api)->Get("/emulator/pools");
  size_t bad_pools = 0;
  if (pools.ok()) {
    for (const json& p : *pools) {
      if (!p["problems"].empty()) ++bad_pools;
    }
  }

  std::printf(
      "| 8 x H100 (`hgx-h100-mig7`) | DynamicMIG | without the gate |\n"
      "|---|---|---|\n"
      "| devices | %zu | %zu |\n"
      "| counter sets | %zu | %zu |\n"
      "| slices (of them counters only) | %zu (%zu) | %zu (%zu) |\n"
      "| most devices in a slice | %zu | %zu |\n"
      "| JSON of all slices / the largest | %.1f / %.1f KiB | %.1f / %.1f "
      "KiB |\n"
      "| discovery, median | %.0f us (profiles read) | %.0f us |\n"
      "| inventory, median | %.0f us | %.0f us |\n"
      "| slices cut and written as JSON, median | %.0f us | %.0f us |\n"
      "| whole publication of a new pool, p50 / p99 of %d | %.1f / %.1f ms | "
      "%.1f / %.1f ms |\n"
      "| one GPU's devices tainted or untainted (in place), p50 / p99 of %d "
      "| %.1f / %.1f ms | %.1f / %.1f ms |\n"
      "| emulator: violations / pools with problems | 0 / %zu | |\n",
      dyn_shape.devices, stat_shape.devices, dyn_shape.counter_sets,
      stat_shape.counter_sets, dyn_shape.slices, dyn_shape.counter_slices,
      stat_shape.slices, stat_shape.counter_slices, dyn_shape.max_devices,
      stat_shape.max_devices, dyn_shape.total_bytes / 1024.0,
      dyn_shape.max_bytes / 1024.0, stat_shape.total_bytes / 1024.0,
      stat_shape.max_bytes / 1024.0, discover_profiles_us, discover_us,
      build_us(dynamic), build_us(fixed), cut_us(*dyn), cut_us(*stat), rounds,
      Percentile(pub_dyn->whole_ms, 0.5), Percentile(pub_dyn->whole_ms, 0.99),
      Percentile(pub_stat->whole_ms, 0.5), Percentile(pub_stat->whole_ms, 0.99),
      rounds, Percentile(pub_dyn->in_place_ms, 0.5),
      Percentile(pub_dyn->in_place_ms, 0.99),
      Percentile(pub_stat->in_place_ms, 0.5),
      Percentile(pub_stat->in_place_ms, 0.99), bad_pools);
  return bad_pools == 0 ? 0 : 1;
}

}  // namespace
}  // namespace gdp::bench

int main(int argc, char** argv) {
  CLI::App app{"ResourceSlices of an 8-GPU H100 node, with DynamicMIG"};
  int rounds = 50;
  std::string dir = "/tmp/gdp-dra-slices-bench";
  std::string lib = GDP_FAKE_NVML_LIB;
  std::string machines = GDP_MACHINES_DIR;
  std::string apiserver = GDP_APISERVER_PY;
  app.add_option("--rounds", rounds, "publications timed")
      ->check(CLI::Range(2, 100000));
  app.add_option("--dir", dir, "scratch directory (removed)");
  app.add_option("--fake-nvml-lib", lib, "the fake libnvidia-ml.so.1");
  app.add_option("--machines", machines, "the fake NVML's machine files");
  app.add_option("--apiserver", apiserver, "tests/kube/apiserver.py");
  CLI11_PARSE(app, argc, argv);
  return gdp::bench::Run(rounds, dir, lib, machines, apiserver);
}
