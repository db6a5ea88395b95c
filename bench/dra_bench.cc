// Measures the DRA side (--device-api=dra) against the Kubernetes API
// server emulator, with the kubelet's side done in-process (the
// registration calls, then a gRPC client of dra.sock), in one run:
// (a) NodePrepareResources of a fresh one-GPU claim and of one already
// prepared, against their floors (dra_prepare.h); (b) start to registered
// and to slices published; (c) XID to taint published; (d) slices deleted
// to published again. Slices are followed with a watch, not polled. (b)
// and (c) start plugins of their own; (a) and (d) share one.
// Usage: dra_bench --plugin BIN --fake-lib DIR --machine FILE
//        --rootfs-tool BIN --apiserver PY [--claims N] [--calls N]
//        [--starts N] [--xids N] [--deletes N] [--plugin-arg ARG]...
//        ("{root}" in a plugin argument becomes the fixture root)
//        dra_bench --serve-echo SOCKET   (internal: the echo server, the
//        testing kit's FakeDraPlugin)
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/dra_env.h"
#include "bench/dra_prepare.h"
#include "bench/slice_watch.h"
#include "testing/fake_dra_plugin.h"

namespace gdp::bench {
namespace {

namespace fs = std::filesystem;
using testing::Subprocess;

constexpr int kGpus = 8;

struct Options : DraEnvOptions {
  // More than 5 deletions in a row (the publisher's burst for others'
  // writes) are rate limited as a fight over the pool, by design.
  int claims = 500, calls = 2000, starts = 10, xids = 60, deletes = 5;
};

struct Stats {
  double p50, p99, max;
};

// Zeros for no values.
Stats Summarize(std::vector<double> v) {
  if (v.empty()) return {0, 0, 0};
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() * 99 / 100], v.back()};
}

absl::Status Failed(absl::string_view what, const Subprocess& plugin) {
  return absl::InternalError(
      absl::StrCat(what, "; the plugin's log:\n", plugin.Stderr()));
}

// Milliseconds from spawning the plugin.
struct StartTimes {
  double registered, published;
};

// (b) One start: until the in-process kubelet registered the plugin, and
// until the watch sees `kGpus` devices (the slices, the checkpoint and the
// CDI specs were removed first).
absl::StatusOr<StartTimes> StartOnce(DraEnv& env, SliceWatch& watch) {
  if (absl::Status s = env.DeleteSlices(); !s.ok()) return s;
  if (!watch.WaitUntil(DeviceCountIs(0), absl::Seconds(10))) {
    return absl::InternalError("the slices were not deleted");
  }
  env.ForgetClaims();
  watch.Arm(DeviceCountIs(kGpus));
  const absl::Time t0 = absl::Now();
  std::unique_ptr<Subprocess> plugin = env.SpawnPlugin();
  absl::StatusOr<pluginregistration::PluginInfo> info =
      RegisterDraPlugin(env.registration_socket(), absl::Seconds(10));
  const absl::Time registered = absl::Now();
  if (!info.ok()) return Failed(info.status().message(), *plugin);
  const absl::Time published = watch.Await(absl::Seconds(15));
  if (published == absl::InfinitePast()) {
    return Failed("no slices published", *plugin);
  }
  plugin->Signal(SIGTERM);
  if (plugin->Wait(absl::Seconds(5)) != 0) {
    return Failed("the plugin did not exit 0 on SIGTERM", *plugin);
  }
  return StartTimes{absl::ToDoubleMilliseconds(registered - t0),
                    absl::ToDoubleMilliseconds(published - t0)};
}

// Whether no device has a taint.
bool Untainted(const SliceDevices& devices) {
  for (const auto& [name, d] : devices) {
    if (!d.value("taints", nlohmann::json::array()).empty()) return false;
  }
  return true;
}

// Appends XID 32 (recoverable) for `gpu` to the control file, and returns
// when the watch saw its taint: milliseconds, or nullopt after `timeout`.
std::optional<double> Xid(DraEnv& env, SliceWatch& watch, int gpu,
                          absl::Duration timeout) {
  watch.Arm(HasTaint(absl::StrCat("gpu-", gpu), "gpu.nvidia.com/xid"));
  const absl::Time t0 = absl::Now();
  std::ofstream(env.control(), std::ios::app) << "xid " << gpu << " 32\n";
  const absl::Time t = watch.Await(timeout);
  if (t == absl::InfinitePast()) return std::nullopt;
  return absl::ToDoubleMilliseconds(t - t0);
}

// (c) Milliseconds from an XID 32 (recoverable) appended to the control
// file to the watch seeing the GPU's taint, for at least `n` events. The
// plugin holds a GPU that fails again longer each time, so each of
// ceil(n / 15) plugin starts sends: an untimed XID to gpu-0 (again every
// second until its taint shows: the health monitor is then watching), a
// timed one to each other GPU, then, as each GPU's taint goes after the
// quiet period, one to each GPU again.
absl::StatusOr<std::vector<double>> TimeXids(DraEnv& env, SliceWatch& watch,
                                             int n) {
  std::vector<double> ms;
  while (static_cast<int>(ms.size()) < n) {
    std::unique_ptr<Subprocess> plugin = env.SpawnPlugin();
    auto ready = [](const SliceDevices& d) {
      return d.size() == kGpus && Untainted(d);
    };
    if (!watch.WaitUntil(ready, absl::Seconds(15))) {
      return Failed("no untainted slices published", *plugin);
    }
    bool watching = false;
    for (int i = 0; i < 10 && !watching; ++i) {
      watching = Xid(env, watch, 0, absl::Seconds(1)).has_value();
    }
    if (!watching) return Failed("no taint on gpu-0", *plugin);
    for (int round = 0; round < 2; ++round) {
      for (int g = round == 0 ? 1 : 0; g < kGpus; ++g) {
        const std::string gpu = absl::StrCat("gpu-", g);
        if (!watch.WaitUntil(HasNoTaint(gpu), absl::Seconds(20))) {
          return Failed(gpu + " kept its taint", *plugin);
        }
        std::optional<double> t = Xid(env, watch, g, absl::Seconds(10));
        if (!t.has_value()) return Failed("no taint on " + gpu, *plugin);
        ms.push_back(*t);
      }
    }
    plugin->Signal(SIGTERM);
    plugin->Wait(absl::Seconds(5));
  }
  return ms;
}

// (d) DeleteCollection of the node's slices, until the watch sees all
// `kGpus` devices again; milliseconds from sending the delete.
absl::StatusOr<std::vector<double>> TimeDeletes(DraEnv& env, SliceWatch& watch,
                                                int n,
                                                const Subprocess& plugin) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    // A pause between rounds, so that each starts from a settled plugin.
    absl::SleepFor(absl::Milliseconds(100));
    watch.Arm(DeviceCountIs(kGpus));
    const absl::Time t0 = absl::Now();
    if (absl::Status s = env.DeleteSlices(); !s.ok()) return s;
    const absl::Time t = watch.Await(absl::Seconds(10));
    if (t == absl::InfinitePast()) return Failed("not published again", plugin);
    ms.push_back(absl::ToDoubleMilliseconds(t - t0));
  }
  return ms;
}

void Print(const Options& o, size_t devices, const PrepareTimes& p,
           const std::vector<StartTimes>& starts,
           const std::vector<double>& xid_ms,
           const std::vector<double>& delete_ms) {
  std::vector<double> registered_ms, published_ms;
  for (const StartTimes& s : starts) {
    registered_ms.push_back(s.registered);
    published_ms.push_back(s.published);
  }
  const Stats fresh = Summarize(p.fresh), writes = Summarize(p.writes),
              kept = Summarize(p.kept), echo = Summarize(p.echo),
              get = Summarize(p.get), reg = Summarize(registered_ms),
              pub = Summarize(published_ms), xid = Summarize(xid_ms),
              del = Summarize(delete_ms);
  std::cout << absl::StrFormat(
      "| measure | value | target |\n|---|---|---|\n"
      "| devices published | %d | |\n"
      "| NodePrepareResources, fresh claim (read from the API server), "
      "p50 / p99 (%d calls) | %.2f / %.2f ms | |\n"
      "| floor: bare gRPC echo of NodePrepareResources, p50 / p99 (%d calls) "
      "| %.0f / %.0f us | |\n"
      "| floor: bare HTTPS GET of a claim from the emulator (kube client), "
      "p50 / p99 (%d calls) | %.2f / %.2f ms | |\n"
      "| floor: CDI spec + checkpoint written atomically (fsync), p50 / p99 "
      "(%d pairs) | %.2f / %.2f ms | |\n"
      "| fresh Prepare / (echo + GET), p50; p99 | %.1fx; %.1fx | |\n"
      "| fresh Prepare / (echo + GET + writes), p50; p99 | %.2fx; %.2fx | |\n"
      "| NodePrepareResources, claim already prepared (from the checkpoint), "
      "p50 / p99 (%d calls) | %.0f / %.0f us | |\n"
      "| prepared claim / echo, p50; p99 | %.2fx; %.2fx | |\n"
      "| start to registered (GetInfo + NotifyRegistrationStatus answered), "
      "p50 / max of %d | %.1f / %.1f ms | |\n"
      "| start to slices published (the watch sees %d devices), p50 / max "
      "of %d | %.1f / %.1f ms | |\n"
      "| XID 32 to taint seen by the watch, p50 / p99 / max (%d events) | "
      "%.1f / %.1f / %.1f ms | p99 <= 100 ms |\n"
      "| slices deleted (DeleteCollection) to %d devices seen again, p50 / "
      "max of %d | %.1f / %.1f ms | <= 1 s |\n",
      static_cast<int>(devices), static_cast<int>(p.fresh.size()),
      fresh.p50 / 1000, fresh.p99 / 1000, static_cast<int>(p.echo.size()),
      echo.p50, echo.p99, static_cast<int>(p.get.size()), get.p50 / 1000,
      get.p99 / 1000, static_cast<int>(p.writes.size()), writes.p50 / 1000,
      writes.p99 / 1000, fresh.p50 / (echo.p50 + get.p50),
      fresh.p99 / (echo.p99 + get.p99),
      fresh.p50 / (echo.p50 + get.p50 + writes.p50),
      fresh.p99 / (echo.p99 + get.p99 + writes.p99),
      static_cast<int>(p.kept.size()), kept.p50, kept.p99, kept.p50 / echo.p50,
      kept.p99 / echo.p99, o.starts, reg.p50, reg.max, kGpus, o.starts, pub.p50,
      pub.max, static_cast<int>(xid_ms.size()), xid.p50, xid.p99, xid.max,
      kGpus, o.deletes, del.p50, del.max);
}

absl::Status Run(const Options& o) {
  const absl::Time begin = absl::Now();
  absl::StatusOr<std::unique_ptr<DraEnv>> env = DraEnv::Create(
      o, fs::path("/tmp") / ("gdp-dbench-" + std::to_string(getpid())));
  if (!env.ok()) return env.status();
  absl::StatusOr<std::unique_ptr<kube::Client>> watch_api = (*env)->NewClient();
  if (!watch_api.ok()) return watch_api.status();
  SliceWatch watch(*std::move(watch_api), kDraNode);

  std::vector<StartTimes> starts;
  for (int i = 0; i < o.starts; ++i) {
    absl::StatusOr<StartTimes> t = StartOnce(**env, watch);
    if (!t.ok()) return t.status();
    starts.push_back(*t);
  }

  absl::StatusOr<std::vector<double>> xids = TimeXids(**env, watch, o.xids);
  if (!xids.ok()) return xids.status();

  // One long-lived plugin for (a) and (d).
  std::unique_ptr<Subprocess> plugin = (*env)->SpawnPlugin();
  absl::StatusOr<pluginregistration::PluginInfo> info =
      RegisterDraPlugin((*env)->registration_socket(), absl::Seconds(10));
  if (!info.ok()) return Failed(info.status().message(), *plugin);
  if (!watch.WaitUntil(DeviceCountIs(kGpus), absl::Seconds(15))) {
    return Failed("no slices published", *plugin);
  }
  absl::StatusOr<PrepareTimes> prepares = TimePrepares(
      **env, info->endpoint(), fs::read_symlink("/proc/self/exe").string(),
      o.claims, o.calls);
  if (!prepares.ok()) return Failed(prepares.status().message(), *plugin);
  absl::StatusOr<std::vector<double>> deletes =
      TimeDeletes(**env, watch, o.deletes, *plugin);
  if (!deletes.ok()) return deletes.status();
  plugin->Signal(SIGTERM);
  plugin->Wait(absl::Seconds(5));
  Print(o, watch.Devices().size(), *prepares, starts, *xids, *deletes);
  std::cerr << "dra_bench: done in "
            << absl::FormatDuration(
                   absl::Trunc(absl::Now() - begin, absl::Milliseconds(100)))
            << "\n";
  return absl::OkStatus();
}

}  // namespace
}  // namespace gdp::bench

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--serve-echo") {
    gdp::testing::FakeDraPlugin echo(argv[2], argv[2]);
    if (!echo.StartEndpoint()) {
      std::cerr << "dra_bench: cannot serve " << argv[2] << "\n";
      return 1;
    }
    pause();  // until killed
    return 0;
  }
  CLI::App app{"gpu-device-plugin DRA benchmarks"};
  gdp::bench::Options o;
  gdp::bench::AddFixtureOptions(app, &o, /*required=*/true);
  gdp::bench::AddDraEnvOptions(app, &o);
  app.add_option("--claims", o.claims, "fresh claims prepared (timed)");
  app.add_option("--calls", o.calls,
                 "calls of each: prepared-claim Prepare, echo, GET");
  app.add_option("--starts", o.starts, "plugin starts");
  app.add_option("--xids", o.xids, "XID events");
  app.add_option("--deletes", o.deletes, "slice deletions");
  CLI11_PARSE(app, argc, argv);
  if (absl::Status s = gdp::bench::Run(o); !s.ok()) {
    std::cerr << "dra_bench: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
