// Measures, in one run: (a) Allocate round trip through the plugin's socket
// against a bare gRPC echo served the same way, (b) the idle daemon's memory,
// (c) start to registered, (d) new kubelet.sock to re-registered, at once
// and after the kubelet was down for a second (its restart wipes our
// socket: the plugin serves anew, then registers), (e) the full
// ListAndWatch list: its size and the time from opening the stream to
// having it decoded.
// Usage: plugin_bench --plugin BIN --fake-lib DIR --machine FILE
//        --rootfs-tool BIN [--calls N] [--runs N] [--request N]
//        [--socket-name NAME] [--plugin-arg ARG]...
//        ("{root}" in a plugin argument becomes the fixture root)
//        plugin_bench --serve-echo SOCKET   (internal: the echo server)
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/fixture.h"
#include "testing/fake_kubelet.h"
#include "testing/subprocess.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp::bench {
namespace {

namespace fs = std::filesystem;
using testing::Subprocess;

// The echo floor: the same service and messages, answering Allocate by
// echoing the IDs back as NVIDIA_VISIBLE_DEVICES, on the same callback API.
class EchoService final : public v1beta1::DevicePlugin::CallbackService {
  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* ctx,
                                     const v1beta1::AllocateRequest* req,
                                     v1beta1::AllocateResponse* resp) override {
    for (const auto& c : req->container_requests()) {
      (*resp->add_container_responses()
            ->mutable_envs())["NVIDIA_VISIBLE_DEVICES"] =
          absl::StrJoin(c.devices_ids(), ",");
    }
    auto* r = ctx->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }
};

int ServeEcho(const std::string& socket) {
  EchoService service;
  grpc::ServerBuilder b;
  b.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  b.RegisterService(&service);
  auto server = b.BuildAndStart();
  pause();  // until killed
  return 0;
}

struct Percentiles {
  double p50_us, p99_us;
};

Percentiles Summarize(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

// Allocate round trips on `stub`, microseconds each.
void TimeAllocates(v1beta1::DevicePlugin::Stub& stub,
                   const v1beta1::AllocateRequest& req, int n,
                   std::vector<double>* out) {
  for (int i = 0; i < n; ++i) {
    grpc::ClientContext ctx;
    v1beta1::AllocateResponse resp;
    absl::Time t0 = absl::Now();
    grpc::Status s = stub.Allocate(&ctx, req, &resp);
    double us = absl::ToDoubleMicroseconds(absl::Now() - t0);
    if (!s.ok()) {
      std::cerr << "Allocate failed: " << s.error_message() << "\n";
      std::exit(1);
    }
    out->push_back(us);
  }
}

std::unique_ptr<v1beta1::DevicePlugin::Stub> Stub(const std::string& socket) {
  return v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      "unix:" + socket, grpc::InsecureChannelCredentials()));
}

void WaitForSocket(const std::string& path) {
  for (int i = 0; i < 1000 && !fs::is_socket(path); ++i) usleep(1000);
}

// kB values from /proc/PID/smaps_rollup.
std::map<std::string, long> Smaps(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::map<std::string, long> out;
  std::string key;
  long kb;
  std::string unit;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (ls >> key >> kb >> unit && unit == "kB") out[key] = kb;
  }
  return out;
}

struct Options : FixtureOptions {
  int calls = 20000, runs = 10, request = 2;
  std::string socket_name = "nvidia-gpu.sock";
};

// (e) Opens ListAndWatch `n` times; returns the first list's time to
// arrive, in microseconds, and the list itself in *list.
std::vector<double> TimeFullLists(v1beta1::DevicePlugin::Stub& stub, int n,
                                  v1beta1::ListAndWatchResponse* list) {
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    grpc::ClientContext ctx;
    absl::Time t0 = absl::Now();
    auto stream = stub.ListAndWatch(&ctx, {});
    if (!stream->Read(list)) {
      std::cerr << "ListAndWatch sent nothing\n";
      std::exit(1);
    }
    us.push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
    ctx.TryCancel();
    stream->Finish();
  }
  return us;
}

int Run(const Options& o) {
  const int calls = o.calls, runs = o.runs;
  fs::path dir = fs::path("/tmp") / ("gdp-bench-" + std::to_string(getpid()));
  fs::remove_all(dir);
  absl::StatusOr<std::vector<std::string>> argv = MakeFixture(o, dir);
  if (!argv.ok()) {
    std::cerr << argv.status().message() << "\n";
    return 1;
  }
  auto spawn = [&] {
    return std::make_unique<Subprocess>(
        testing::SpawnOptions{.argv = *argv,
                              .env = PluginEnv(o),
                              .stderr_path = (dir / "plugin.err").string()});
  };

  // (c) start to registered.
  std::vector<double> start_ms;
  for (int i = 0; i < runs; ++i) {
    testing::FakeKubelet kubelet(dir / "kp");
    absl::Time t0 = absl::Now();
    auto p = spawn();
    absl::Time t = kubelet.WaitForRegistrations(1, absl::Seconds(10));
    if (t == absl::InfinitePast()) {
      std::cerr << "plugin did not register:\n" << p->Stderr();
      return 1;
    }
    start_ms.push_back(absl::ToDoubleMilliseconds(t - t0));
    p->Signal(SIGTERM);
    p->Wait(absl::Seconds(5));
  }

  // One long-lived daemon for (d), (b) and (a).
  auto kubelet = std::make_unique<testing::FakeKubelet>(dir / "kp");
  auto daemon = spawn();
  kubelet->WaitForRegistrations(1, absl::Seconds(10));

  // (d) new kubelet.sock to re-registered.
  std::vector<double> rereg_ms;
  for (int i = 0; i < runs; ++i) {
    kubelet.reset();
    kubelet = std::make_unique<testing::FakeKubelet>(dir / "kp");
    absl::Time t = kubelet->WaitForRegistrations(1, absl::Seconds(10));
    if (t == absl::InfinitePast()) {
      std::cerr << "plugin did not re-register:\n" << daemon->Stderr();
      return 1;
    }
    rereg_ms.push_back(absl::ToDoubleMilliseconds(t - kubelet->started()));
  }
  // (d) again with the kubelet down for about a second, as a restart is.
  std::vector<double> gap_ms;
  for (int i = 0; i < runs; ++i) {
    kubelet.reset();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    kubelet = std::make_unique<testing::FakeKubelet>(dir / "kp");
    absl::Time t = kubelet->WaitForRegistrations(1, absl::Seconds(10));
    if (t == absl::InfinitePast()) {
      std::cerr << "plugin did not re-register after a gap:\n"
                << daemon->Stderr();
      return 1;
    }
    gap_ms.push_back(absl::ToDoubleMilliseconds(t - kubelet->started()));
  }

  // (b) idle memory, after a quiet second.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  std::map<std::string, long> mem = Smaps(daemon->pid());

  // (a) Allocate against the echo floor, interleaved in blocks.
  std::string plugin_socket = (dir / "kp" / o.socket_name).string();
  WaitForSocket(plugin_socket);
  std::string echo_socket = (dir / "echo.sock").string();
  Subprocess echo({.argv = {fs::read_symlink("/proc/self/exe").string(),
                            "--serve-echo", echo_socket}});
  WaitForSocket(echo_socket);
  auto plugin_stub = Stub(plugin_socket);
  auto echo_stub = Stub(echo_socket);
  v1beta1::ListAndWatchResponse devices;
  TimeFullLists(*plugin_stub, 1, &devices);
  if (devices.devices_size() < o.request) {
    std::cerr << "only " << devices.devices_size() << " devices\n";
    return 1;
  }
  v1beta1::AllocateRequest req;
  auto* c = req.add_container_requests();
  for (int i = 0; i < o.request; ++i) {
    c->add_devices_ids(devices.devices(i).id());
  }
  std::vector<double> ours, floor;
  TimeAllocates(*plugin_stub, req, 500, &ours);  // warm up both
  TimeAllocates(*echo_stub, req, 500, &floor);
  ours.clear();
  floor.clear();
  const int block = 500;
  for (int done = 0; done < calls; done += block) {
    TimeAllocates(*plugin_stub, req, block, &ours);
    TimeAllocates(*echo_stub, req, block, &floor);
  }
  Percentiles a = Summarize(ours), e = Summarize(floor);
  TimeFullLists(*plugin_stub, 20, &devices);  // warm up
  Percentiles lw = Summarize(TimeFullLists(*plugin_stub, 200, &devices));
  Percentiles st = Summarize(start_ms), rr = Summarize(rereg_ms),
              gap = Summarize(gap_ms);

  std::cout << absl::StrFormat(
      "| measure | value | target |\n|---|---|---|\n"
      "| devices advertised | %d | |\n"
      "| full ListAndWatch list: size; open to decoded p50 / p99 (200 opens) "
      "| %.1f KiB; %.2f / %.2f ms | < 5 ms |\n"
      "| Allocate round trip p50 / p99 (%d IDs, %d calls) | %.1f / %.1f us | "
      "|\n"
      "| bare gRPC echo p50 / p99 (same socket kind, same run) | %.1f / %.1f "
      "us | |\n"
      "| Allocate p99 / echo p99 | %.2fx | <= 1.2x |\n"
      "| idle daemon RSS | %.1f MiB | |\n"
      "| idle daemon private dirty (Private_Dirty) | %.2f MiB | <= 4 MiB |\n"
      "| start to registered, p50 / max of %d | %.1f / %.1f ms | <= 100 ms |\n"
      "| new kubelet.sock to re-registered, p50 / max of %d | %.1f / %.1f ms | "
      "<= 100 ms |\n"
      "| kubelet down 1 s, new kubelet.sock to re-registered, p50 / max of %d "
      "| %.1f / %.1f ms | < 20 ms |\n",
      devices.devices_size(), devices.ByteSizeLong() / 1024.0, lw.p50_us / 1000,
      lw.p99_us / 1000, o.request, calls, a.p50_us, a.p99_us, e.p50_us,
      e.p99_us, a.p99_us / e.p99_us, mem["Rss:"] / 1024.0,
      mem["Private_Dirty:"] / 1024.0, runs, st.p50_us,
      *std::max_element(start_ms.begin(), start_ms.end()), runs, rr.p50_us,
      *std::max_element(rereg_ms.begin(), rereg_ms.end()), runs, gap.p50_us,
      *std::max_element(gap_ms.begin(), gap_ms.end()));
  echo.Signal(SIGKILL);
  daemon->Signal(SIGTERM);
  daemon->Wait(absl::Seconds(5));
  kubelet.reset();
  fs::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace gdp::bench

int main(int argc, char** argv) {
  CLI::App app{"gpu-device-plugin benchmarks"};
  std::string echo;
  gdp::bench::Options o;
  app.add_option("--serve-echo", echo, "internal: serve the echo floor here");
  // Not required: --serve-echo runs without them.
  AddFixtureOptions(app, &o, /*required=*/false);
  app.add_option("--calls", o.calls, "Allocate calls per server");
  app.add_option("--runs", o.runs, "start and re-registration runs");
  app.add_option("--request", o.request, "device IDs per Allocate");
  app.add_option("--socket-name", o.socket_name, "the resource's socket");
  CLI11_PARSE(app, argc, argv);
  if (!echo.empty()) return gdp::bench::ServeEcho(echo);
  if (o.plugin.empty() || o.fake_lib.empty() || o.machine.empty() ||
      o.rootfs_tool.empty()) {
    std::cerr << app.help();
    return 64;
  }
  return gdp::bench::Run(o);
}
