// Measures what the idle daemon costs: its CPU time and its threads'
// context switches over a window (default 60 s) while registered with the
// in-process kubelet and holding one open ListAndWatch stream, metrics off;
// and, over the same window, the same for a reference: a bare gRPC server
// in its own process holding one ListAndWatch stream open on the same kind
// of unix socket. Then the time from SIGTERM to the daemon's exit.
// Usage: idle_bench --plugin BIN --fake-lib DIR --machine FILE
//        --rootfs-tool BIN [--seconds N] [--settle-seconds N] [--verbose]
//        [--socket-name NAME] [--plugin-arg ARG]...
//        ("{root}" in a plugin argument becomes the fixture root;
//        --verbose: per-thread figures on stderr)
//        idle_bench --serve-reference SOCKET --reference-devices N
//        (internal: the reference server)
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "bench/fixture.h"
#include "bench/idle_streams.h"
#include "bench/proc_usage.h"
#include "testing/fake_kubelet.h"
#include "testing/subprocess.h"

namespace gdp::bench {
namespace {

namespace fs = std::filesystem;
using testing::Subprocess;

struct Options : FixtureOptions {
  int seconds = 60, settle_seconds = 2;
  bool verbose = false;
  std::string socket_name = "nvidia-gpu.sock";
};

bool WaitForSocket(const std::string& path) {
  for (int i = 0; i < 10000 && !fs::is_socket(path); ++i) usleep(1000);
  return fs::is_socket(path);
}

// One measured process: its samples and the most threads seen.
struct Measured {
  const char* name = "";
  pid_t pid = 0;
  ProcessUsage before = {}, after = {};
  int max_threads = 0;

  void Note() { max_threads = std::max(max_threads, CountThreads(pid)); }
};

// Whether a thread is one gRPC 1.51 starts, by the name it gives it (a
// comm keeps 15 characters). The daemon's own threads keep its name.
bool IsGrpcThread(const std::string& comm) {
  for (const char* prefix :
       {"default-executo", "resolver-execut", "grpc_global_tim", "event_engine",
        "timer_manager", "nexting_thread", "grpcpp_sync_ser"}) {
    if (absl::StartsWith(comm, prefix)) return true;
  }
  return false;
}

// The live threads of `d` that are (or are not) gRPC's, summed.
struct Group {
  int threads = 0;
  int64_t cpu_ns = 0, voluntary = 0;
};
Group Sum(const UsageDelta& d, bool grpc) {
  Group g;
  for (const ThreadUsage& t : d.threads) {
    if (IsGrpcThread(t.comm) != grpc) continue;
    g.threads++;
    g.cpu_ns += t.cpu_ns;
    g.voluntary += t.voluntary;
  }
  return g;
}

// "1.23x", or why there is no ratio.
std::string Ratio(double ours, double reference) {
  if (reference <= 0) return ours <= 0 ? "both 0" : "n/a (reference 0)";
  return absl::StrFormat("%.1fx", ours / reference);
}

void PrintThreads(const Measured& m, const UsageDelta& d, double seconds) {
  std::cerr << absl::StrFormat(
      "%s (pid %d): %d threads at the end, %d started and %d exited in the "
      "window\n",
      m.name, m.pid, static_cast<int>(m.after.threads.size()),
      d.threads_started, d.threads_exited);
  for (const ThreadUsage& t : d.threads) {
    std::cerr << absl::StrFormat(
        "  %-16s %-6s tid %-7d %8.3f ms  %6d voluntary (%.2f/s)  %4d "
        "nonvoluntary\n",
        t.comm, IsGrpcThread(t.comm) ? "gRPC" : "", t.tid, t.cpu_ns / 1e6,
        t.voluntary, t.voluntary / seconds, t.nonvoluntary);
  }
}

int Run(const Options& o) {
  fs::path dir = fs::path("/tmp") / ("gdp-ibench-" + std::to_string(getpid()));
  fs::remove_all(dir);
  absl::StatusOr<std::vector<std::string>> argv = MakeFixture(o, dir);
  if (!argv.ok()) {
    std::cerr << argv.status().message() << "\n";
    return 1;
  }
  testing::FakeKubelet kubelet(dir / "kp");
  // Metrics stay off: no --metrics-address, and none from our environment.
  Subprocess daemon({.argv = *argv,
                     .env = PluginEnv(o),
                     .unset_env = {"METRICS_ADDRESS"},
                     .stderr_path = (dir / "plugin.err").string()});
  if (kubelet.WaitForRegistrations(1, absl::Seconds(10)) ==
      absl::InfinitePast()) {
    std::cerr << "plugin did not register:\n" << daemon.Stderr();
    return 1;
  }
  const std::string plugin_socket = (dir / "kp" / o.socket_name).string();
  if (!WaitForSocket(plugin_socket)) {
    std::cerr << "no " << plugin_socket << ":\n" << daemon.Stderr();
    return 1;
  }
  HeldStream daemon_stream(plugin_socket);
  const int devices = daemon_stream.WaitForList(absl::Seconds(10));
  if (devices < 0) {
    std::cerr << "ListAndWatch sent no list:\n" << daemon.Stderr();
    return 1;
  }
  const std::string reference_socket = (dir / "reference.sock").string();
  Subprocess reference(
      {.argv = {fs::read_symlink("/proc/self/exe").string(),
                "--serve-reference", reference_socket, "--reference-devices",
                std::to_string(devices)},
       .stderr_path = (dir / "reference.err").string()});
  if (!WaitForSocket(reference_socket)) {
    std::cerr << "the reference did not serve:\n" << reference.Stderr();
    return 1;
  }
  HeldStream reference_stream(reference_socket);
  if (reference_stream.WaitForList(absl::Seconds(10)) != devices) {
    std::cerr << "the reference sent no list\n";
    return 1;
  }
  absl::SleepFor(absl::Seconds(o.settle_seconds));

  // The window: both sampled together at each end, thread counts each
  // second in between.
  Measured ours{.name = "daemon", .pid = daemon.pid()};
  Measured ref{.name = "reference", .pid = reference.pid()};
  const int lists_before = daemon_stream.lists();
  const int reference_lists_before = reference_stream.lists();
  // Reads both processes' usage into `field`; false (said) on failure.
  auto sample = [&](ProcessUsage Measured::*field) {
    for (Measured* m : {&ours, &ref}) {
      absl::StatusOr<ProcessUsage> u = ReadUsage(m->pid);
      if (!u.ok()) {
        std::cerr << m->name << ": " << u.status().message() << "\n";
        return false;
      }
      m->*field = *std::move(u);
      m->Note();
    }
    return true;
  };
  const absl::Time start = absl::Now();
  if (!sample(&Measured::before)) return 1;
  const absl::Time end = start + absl::Seconds(o.seconds);
  for (absl::Time next = start + absl::Seconds(1); next < end;
       next += absl::Seconds(1)) {
    absl::SleepFor(next - absl::Now());
    ours.Note();
    ref.Note();
  }
  absl::SleepFor(end - absl::Now());
  if (!sample(&Measured::after)) return 1;
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (daemon.Wait(absl::ZeroDuration()).has_value() ||
      reference.Wait(absl::ZeroDuration()).has_value() ||
      !daemon_stream.open() || !reference_stream.open()) {
    std::cerr << "a process exited or a ListAndWatch stream ended in the "
                 "window:\n"
              << daemon.Stderr();
    return 1;
  }
  const int updates = daemon_stream.lists() - lists_before;
  const int reference_updates =
      reference_stream.lists() - reference_lists_before;

  // SIGTERM to exit.
  const absl::Time term = absl::Now();
  daemon.Signal(SIGTERM);
  std::optional<int> code = daemon.Wait(absl::Seconds(10));
  const double exit_ms = absl::ToDoubleMilliseconds(absl::Now() - term);
  reference.Signal(SIGKILL);
  reference.Wait(absl::Seconds(5));

  UsageDelta d = Diff(ours.before, ours.after);
  UsageDelta r = Diff(ref.before, ref.after);
  if (o.verbose) {
    PrintThreads(ours, d, seconds);
    PrintThreads(ref, r, seconds);
  }
  const double per_minute = 60 / seconds;
  const Group own = Sum(d, false), grpc = Sum(d, true);
  std::cout << absl::StrFormat(
      "| measure | value | target |\n|---|---|---|\n"
      "| devices advertised; window (both measured together) | %d; %.1f s | "
      "|\n"
      "| idle daemon CPU per minute: on-CPU time; utime+stime (10 ms ticks) "
      "| %.2f ms; %.0f ms | < 3 ms |\n"
      "| idle daemon context switches per second, voluntary / nonvoluntary "
      "(all threads) | %.2f / %.2f | voluntary < 2 |\n"
      "| idle daemon threads (most seen) | %d | <= 10 |\n"
      "| its own threads (not named by gRPC) at the end: threads; CPU per "
      "minute; voluntary switches per second | %d; %.2f ms; %.2f | |\n"
      "| its gRPC threads (by name) at the end: threads; CPU per minute; "
      "voluntary switches per second | %d; %.2f ms; %.2f | |\n"
      "| ListAndWatch lists sent in the window (daemon; reference) | %d; %d "
      "| |\n"
      "| reference (bare gRPC server holding one ListAndWatch stream) CPU per "
      "minute: on-CPU time; utime+stime | %.2f ms; %.0f ms | |\n"
      "| reference context switches per second, voluntary / nonvoluntary | "
      "%.2f / %.2f | |\n"
      "| reference threads (most seen) | %d | |\n"
      "| daemon / reference: on-CPU time; voluntary switches | %s; %s | |\n"
      "| SIGTERM to exit; exit code | %s | < 1 s; 0 |\n",
      devices, seconds, d.cpu_ns / 1e6 * per_minute,
      d.ticks_ns / 1e6 * per_minute, d.voluntary / seconds,
      d.nonvoluntary / seconds, ours.max_threads, own.threads,
      own.cpu_ns / 1e6 * per_minute, own.voluntary / seconds, grpc.threads,
      grpc.cpu_ns / 1e6 * per_minute, grpc.voluntary / seconds, updates,
      reference_updates, r.cpu_ns / 1e6 * per_minute,
      r.ticks_ns / 1e6 * per_minute, r.voluntary / seconds,
      r.nonvoluntary / seconds, ref.max_threads, Ratio(d.cpu_ns, r.cpu_ns),
      Ratio(d.voluntary, r.voluntary),
      code.has_value() ? absl::StrFormat("%.1f ms; %d", exit_ms, *code)
                       : std::string("still running after 10 s"));
  fs::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace gdp::bench

int main(int argc, char** argv) {
  CLI::App app{"gpu-device-plugin idle cost"};
  gdp::bench::Options o;
  std::string reference;
  int reference_devices = 8;
  app.add_option("--serve-reference", reference,
                 "internal: serve the reference here");
  app.add_option("--reference-devices", reference_devices,
                 "internal: devices in the reference's list");
  // Not required: --serve-reference runs without them.
  AddFixtureOptions(app, &o, /*required=*/false);
  app.add_option("--seconds", o.seconds, "the measured window");
  app.add_option("--settle-seconds", o.settle_seconds,
                 "wait after the list arrived, before the window");
  app.add_flag("--verbose", o.verbose, "per-thread figures on stderr");
  app.add_option("--socket-name", o.socket_name, "the resource's socket");
  CLI11_PARSE(app, argc, argv);
  if (!reference.empty()) {
    return gdp::bench::ServeHeldList(reference, reference_devices);
  }
  if (o.plugin.empty() || o.fake_lib.empty() || o.machine.empty() ||
      o.rootfs_tool.empty() || o.seconds <= 0) {
    std::cerr << app.help();
    return 64;
  }
  return gdp::bench::Run(o);
}
