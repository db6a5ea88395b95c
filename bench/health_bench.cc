// Measures GPU health event to ListAndWatch: the time from an XID event
// (appended to the fake NVML's control file) to a ListAndWatch client
// holding the list that shows the GPU's devices unhealthy. Each run starts
// the plugin, opens ListAndWatch on its socket, then sends a needs-reset XID
// to every GPU in turn.
// Usage: health_bench --plugin BIN --fake-lib DIR --machine FILE
//        --rootfs-tool BIN [--runs N] [--plugin-arg ARG]...
//        ("{root}" in a plugin argument becomes the fixture root)
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "bench/fixture.h"
#include "testing/subprocess.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp::bench {
namespace {

namespace fs = std::filesystem;
using testing::Subprocess;

struct Options : FixtureOptions {
  int runs = 25;
};

// Reads ListAndWatch in a thread; remembers the latest unhealthy count and
// when it arrived.
class Watcher {
 public:
  explicit Watcher(const std::string& socket)
      : stub_(v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
            "unix:" + socket, grpc::InsecureChannelCredentials()))) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Watcher() {
    ctx_.TryCancel();
    thread_.join();
  }

  // Blocks until a list with more than `unhealthy` unhealthy devices
  // arrived; returns its arrival time and count (InfinitePast on timeout).
  std::pair<absl::Time, int> WaitAbove(int unhealthy, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    threshold_ = unhealthy;
    mu_.AwaitWithTimeout(absl::Condition(this, &Watcher::AboveLocked), timeout);
    if (!AboveLocked()) return {absl::InfinitePast(), unhealthy_};
    return {arrived_, unhealthy_};
  }

  int devices() {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](int* n) { return *n > 0; }, &devices_),
                         absl::Seconds(10));
    return devices_;
  }

 private:
  void Loop() {
    auto stream = stub_->ListAndWatch(&ctx_, {});
    v1beta1::ListAndWatchResponse r;
    while (stream->Read(&r)) {
      absl::Time now = absl::Now();
      int bad = 0;
      for (const auto& d : r.devices()) bad += d.health() != "Healthy";
      absl::MutexLock lock(&mu_);
      devices_ = r.devices_size();
      unhealthy_ = bad;
      arrived_ = now;
    }
    stream->Finish();
  }

  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  grpc::ClientContext ctx_;
  std::thread thread_;
  absl::Mutex mu_;
  bool AboveLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return unhealthy_ > threshold_;
  }

  int devices_ ABSL_GUARDED_BY(mu_) = 0;
  int threshold_ ABSL_GUARDED_BY(mu_) = 0;
  int unhealthy_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time arrived_ ABSL_GUARDED_BY(mu_);
};

int CountGpus(const std::string& machine) {
  std::ifstream in(machine);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find("- name:") != std::string::npos;
  return n;
}

int Run(const Options& o) {
  fs::path dir = fs::path("/tmp") / ("gdp-hbench-" + std::to_string(getpid()));
  int gpus = CountGpus(o.machine);
  std::vector<double> ms;
  int devices = 0;
  for (int run = 0; run < o.runs; ++run) {
    fs::remove_all(dir);
    absl::StatusOr<std::vector<std::string>> argv = MakeFixture(o, dir);
    if (!argv.ok()) {
      std::cerr << argv.status().message() << "\n";
      return 1;
    }
    std::string control = (dir / "control").string();
    Subprocess plugin({.argv = *argv,
                       .env = PluginEnv(o, control),
                       .stderr_path = (dir / "plugin.err").string()});
    std::string socket = (dir / "kp/nvidia-gpu.sock").string();
    for (int i = 0; i < 2000 && !fs::is_socket(socket); ++i) usleep(1000);
    {
      Watcher watcher(socket);
      devices = watcher.devices();
      usleep(200 * 1000);  // let the monitor register its events
      int unhealthy = 0;
      for (int g = 0; g < gpus; ++g) {
        absl::Time t0 = absl::Now();
        std::ofstream(control, std::ios::app) << "xid " << g << " 48\n";
        auto [t, bad] = watcher.WaitAbove(unhealthy, absl::Seconds(5));
        if (t == absl::InfinitePast()) {
          std::cerr << "no update for GPU " << g << ":\n" << plugin.Stderr();
          return 1;
        }
        ms.push_back(absl::ToDoubleMilliseconds(t - t0));
        unhealthy = bad;
      }
    }
    plugin.Signal(SIGTERM);
    plugin.Wait(absl::Seconds(5));
  }
  fs::remove_all(dir);
  std::sort(ms.begin(), ms.end());
  std::cout << absl::StrFormat(
      "| measure | value | target |\n|---|---|---|\n"
      "| XID event to ListAndWatch update, p50 / p99 / max (%d events, %d "
      "devices) | %.2f / %.2f / %.2f ms | p99 <= 50 ms |\n",
      static_cast<int>(ms.size()), devices, ms[ms.size() / 2],
      ms[ms.size() * 99 / 100], ms.back());
  return 0;
}

}  // namespace
}  // namespace gdp::bench

int main(int argc, char** argv) {
  CLI::App app{"gpu-device-plugin health event latency"};
  gdp::bench::Options o;
  AddFixtureOptions(app, &o, /*required=*/true);
  app.add_option("--runs", o.runs, "plugin starts (one event per GPU each)");
  CLI11_PARSE(app, argc, argv);
  return gdp::bench::Run(o);
}
