// How the DRA side's API load grows with a cluster: N daemons
// (--device-api=dra), each its own node and pool on the fake NVML, against
// one API server emulator (tests/kube/apiserver.py) reached through a TCP
// gate (bench/tcp_gate.h). Measures, in one run:
//   (a) start: until every pool is published;
//   (b) idle: the daemons' API requests per node-hour, their CPU and memory,
//       over --idle seconds (watch renewals come every 5-10 minutes: a
//       window shorter than 10 minutes sees few of them);
//   (c) an API server outage: the gate resets every connection, open and
//       new, for --outage seconds (the slices are deleted meanwhile, unless
//       --keep-slices, so that every pool has to be written again); then
//       the time until every pool is published again, when each node
//       listed, wrote and watched again, and the daemons' requests per
//       second and per 100 ms: spread out, or all at once.
// Loopback only; prints a Markdown report on stdout.
// Usage: many_nodes_bench --plugin BIN --fake-lib DIR --machine FILE
//        --rootfs-tool BIN --apiserver PY [--nodes 100] [--idle 120]
//        [--outage 60] [--spawn-interval-ms 50] [--keep-slices]
//        [--dir DIR] [--plugin-arg ARG]...
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "bench/fixture.h"
#include "bench/proc_usage.h"
#include "bench/tcp_gate.h"
#include "kube/client.h"
#include "kube/config.h"
#include "testing/subprocess.h"

namespace gdp::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::Subprocess;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
// The daemon's User-Agent (kube::ClientConfig's default).
constexpr char kDaemonAgent[] = "gpu-device-plugin";

struct Options : FixtureOptions {
  std::string apiserver, python = "/usr/bin/python3", dir;
  int nodes = 100;
  double idle_s = 120, outage_s = 60, recover_timeout_s = 180;
  int spawn_interval_ms = 50;
  bool keep_slices = false;
};

std::string NodeName(int i) { return absl::StrCat("node-", i); }

double Seconds(absl::Time t) {
  return absl::ToDoubleSeconds(t - absl::UnixEpoch());
}

// The node a daemon's request is about: "node-<n>" in its path (the field
// selector), or -1.
int NodeOf(const std::string& path) {
  size_t at = path.find("node-");
  if (at == std::string::npos) return -1;
  at += 5;
  size_t end = at;
  while (end < path.size() && isdigit(static_cast<unsigned char>(path[end]))) {
    ++end;
  }
  if (end == at) return -1;
  return std::stoi(path.substr(at, end - at));
}

// One request of the emulator's log.
struct Request {
  double time;
  std::string method, path;
  int status;
  bool daemon;  // sent by a daemon (not by this benchmark)
  int node;
  bool watch() const { return absl::StrContains(path, "watch=true"); }
  bool slices() const { return absl::StartsWith(path, kSlices); }
  bool list() const { return method == "GET" && slices() && !watch(); }
  bool write() const { return method != "GET" && slices(); }
};

std::string Kind(const Request& r) {
  if (r.watch()) return "WATCH slices";
  if (r.list()) return "LIST slices";
  if (r.write()) return absl::StrCat(r.method, " slices");
  return absl::StrCat(r.method, " other");
}

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)), dir_(o_.dir) {}
  ~Bench() { StopDaemons(); }

  absl::Status Run();

 private:
  absl::Status StartApiServer();
  absl::Status StartDaemons();
  void StopDaemons();
  // Pools with a complete publication (resourceSliceCount slices of one
  // generation, devices in them), by node index.
  absl::StatusOr<std::set<int>> PublishedPools();
  // Waits until every pool is published or `timeout`, listing every
  // `poll`; the time it took. `*seen`, when given: when each pool was
  // first seen published, in seconds after `since`.
  absl::StatusOr<std::optional<absl::Duration>> WaitPublished(
      absl::Time since, absl::Duration timeout, absl::Duration poll,
      std::map<int, double>* seen = nullptr);
  absl::StatusOr<std::vector<Request>> TakeRequests();
  // Sum over the daemons of CPU (utime+stime) and resident memory.
  int64_t DaemonTicksNs() const;
  int64_t DaemonRssKb() const;

  const Options o_;
  const fs::path dir_;
  std::unique_ptr<Subprocess> api_server_;
  std::unique_ptr<kube::Client> api_;
  std::unique_ptr<TcpGate> gate_;
  std::vector<std::unique_ptr<Subprocess>> daemons_;
  std::ostringstream out_;
};

absl::Status Bench::StartApiServer() {
  fs::create_directories(dir_ / "api");
  // Bookmarks once a minute, as kube-apiserver sends them.
  api_server_ = std::make_unique<Subprocess>(testing::SpawnOptions{
      .argv = {o_.python, o_.apiserver, "--dir", (dir_ / "api").string(),
               "--port", "0", "--bookmark-seconds", "60"},
      .stderr_path = (dir_ / "api.err").string()});
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  int port = 0;
  while (port == 0 && absl::Now() < deadline) {
    std::optional<std::string> line =
        api_server_->ReadLine(deadline - absl::Now());
    if (!line.has_value()) break;
    json e = json::parse(*line, nullptr, /*allow_exceptions=*/false);
    if (e.is_object() && e.value("event", "") == "listening") {
      port = e.value("port", 0);
    }
  }
  if (port == 0) {
    return absl::InternalError(absl::StrCat(
        "the API server emulator did not start: ", api_server_->Stderr()));
  }
  absl::StatusOr<kube::ClientConfig> c =
      kube::LoadKubeconfig((dir_ / "api/kubeconfig").string());
  if (!c.ok()) return c.status();
  c->user_agent = "many_nodes_bench";
  absl::StatusOr<std::unique_ptr<kube::Client>> api = kube::Client::Create(*c);
  if (!api.ok()) return api.status();
  api_ = *std::move(api);
  for (int i = 0; i < o_.nodes; ++i) {
    absl::StatusOr<json> node =
        api_->Create("/api/v1/nodes", {{"apiVersion", "v1"},
                                       {"kind", "Node"},
                                       {"metadata", {{"name", NodeName(i)}}}});
    if (!node.ok()) return node.status();
  }
  absl::StatusOr<std::unique_ptr<TcpGate>> gate = TcpGate::Start(port);
  if (!gate.ok()) return gate.status();
  gate_ = *std::move(gate);
  // The daemons' kubeconfig: the same, through the gate.
  std::ifstream in(dir_ / "api/kubeconfig");
  std::stringstream text;
  text << in.rdbuf();
  std::ofstream(dir_ / "gate-kubeconfig") << absl::StrReplaceAll(
      text.str(), {{absl::StrCat("127.0.0.1:", port),
                    absl::StrCat("127.0.0.1:", gate_->port())}});
  return absl::OkStatus();
}

absl::Status Bench::StartDaemons() {
  FixtureOptions fixture = o_;
  // No health state kept (the daemons would share it), the fixture's /proc
  // (boot ID).
  fixture.plugin_args = {"--state-dir", "", "--proc-root", "{root}/proc"};
  fixture.plugin_args.insert(fixture.plugin_args.end(), o_.plugin_args.begin(),
                             o_.plugin_args.end());
  absl::StatusOr<std::vector<std::string>> base = MakeFixture(fixture, dir_);
  if (!base.ok()) return base.status();
  fs::create_directories(dir_ / "root/proc/sys/kernel/random");
  std::ofstream(dir_ / "root/proc/sys/kernel/random/boot_id") << "boot-1\n";
  for (int i = 0; i < o_.nodes; ++i) {
    const fs::path node = dir_ / NodeName(i);
    for (const char* d : {"reg", "plugins", "cdi"}) {
      fs::create_directories(node / d);
    }
    std::vector<std::string> argv = *base;
    argv.insert(argv.end(),
                {"--device-api", "dra", "--node-name", NodeName(i),
                 "--kubeconfig", (dir_ / "gate-kubeconfig").string(),
                 "--kubelet-registration-dir", (node / "reg").string(),
                 "--kubelet-plugins-dir", (node / "plugins").string(),
                 "--cdi-spec-dir", (node / "cdi").string()});
    daemons_.push_back(std::make_unique<Subprocess>(
        testing::SpawnOptions{.argv = argv,
                              .env = PluginEnv(o_),
                              .stderr_path = (node / "plugin.err").string()}));
    absl::SleepFor(absl::Milliseconds(o_.spawn_interval_ms));
  }
  return absl::OkStatus();
}

void Bench::StopDaemons() {
  for (auto& d : daemons_) d->Signal(SIGTERM);
  for (auto& d : daemons_) d->Wait(absl::Seconds(10));
  daemons_.clear();
}

absl::StatusOr<std::set<int>> Bench::PublishedPools() {
  absl::StatusOr<json> list = api_->List(kSlices, {});
  if (!list.ok()) return list.status();
  // node -> generation -> (slices seen, resourceSliceCount, devices)
  struct Gen {
    int64_t slices = 0, count = 0, devices = 0;
  };
  std::map<int, std::map<int64_t, Gen>> pools;
  for (const json& s : (*list)["items"]) {
    const json& spec = s["spec"];
    const int node = NodeOf(spec.value("nodeName", ""));
    if (node < 0) continue;
    const json& pool = spec["pool"];
    Gen& g = pools[node][pool.value("generation", int64_t{0})];
    ++g.slices;
    g.count = pool.value("resourceSliceCount", int64_t{0});
    g.devices += spec.contains("devices") ? spec["devices"].size() : 0;
  }
  std::set<int> published;
  for (const auto& [node, gens] : pools) {
    const Gen& newest = gens.rbegin()->second;
    if (newest.slices == newest.count && newest.devices > 0) {
      published.insert(node);
    }
  }
  return published;
}

absl::StatusOr<std::optional<absl::Duration>> Bench::WaitPublished(
    absl::Time since, absl::Duration timeout, absl::Duration poll,
    std::map<int, double>* seen) {
  for (;;) {
    absl::StatusOr<std::set<int>> pools = PublishedPools();
    if (!pools.ok()) return pools.status();
    const absl::Time now = absl::Now();
    for (int node : *pools) {
      if (seen != nullptr) {
        seen->try_emplace(node, absl::ToDoubleSeconds(now - since));
      }
    }
    if (static_cast<int>(pools->size()) == o_.nodes) {
      return std::optional<absl::Duration>(now - since);
    }
    if (now - since > timeout) return std::optional<absl::Duration>();
    absl::SleepFor(poll);
  }
}

absl::StatusOr<std::vector<Request>> Bench::TakeRequests() {
  absl::StatusOr<json> log = api_->Get("/emulator/requests");
  if (!log.ok()) return log.status();
  if (absl::Status s = api_->Delete("/emulator/requests"); !s.ok()) return s;
  std::vector<Request> out;
  for (const json& r : *log) {
    Request q;
    q.time = r.value("time", 0.0);
    q.method = r.value("method", "");
    q.path = r.value("path", "");
    q.status = r["status"].is_number() ? r["status"].get<int>() : 0;
    q.daemon = absl::StartsWith(r.value("user_agent", ""), kDaemonAgent);
    q.node = NodeOf(q.path);
    out.push_back(std::move(q));
  }
  return out;
}

int64_t Bench::DaemonTicksNs() const {
  int64_t sum = 0;
  for (const auto& d : daemons_) {
    absl::StatusOr<ProcessUsage> u = ReadUsage(d->pid());
    if (u.ok()) sum += u->ticks_ns;
  }
  return sum;
}

int64_t Bench::DaemonRssKb() const {
  int64_t sum = 0;
  for (const auto& d : daemons_) {
    std::ifstream status(absl::StrCat("/proc/", d->pid(), "/status"));
    std::string line;
    while (std::getline(status, line)) {
      if (absl::StartsWith(line, "VmRSS:")) {
        sum += std::atoll(line.c_str() + 6);
      }
    }
  }
  return sum;
}

// p-quantile of sorted `v` (0 for none).
double Quantile(const std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

std::string Spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return "none";
  return absl::StrFormat("%.2f / %.2f / %.2f / %.2f s (%d nodes)", v.front(),
                         Quantile(v, 0.5), Quantile(v, 0.9), v.back(),
                         static_cast<int>(v.size()));
}

absl::Status Bench::Run() {
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  if (absl::Status s = StartApiServer(); !s.ok()) return s;
  const absl::Time start = absl::Now();
  if (absl::Status s = StartDaemons(); !s.ok()) return s;
  absl::StatusOr<std::optional<absl::Duration>> started = WaitPublished(
      start, absl::Seconds(120) + o_.nodes * absl::Milliseconds(100),
      absl::Milliseconds(500));
  if (!started.ok()) return started.status();
  if (!started->has_value()) {
    return absl::InternalError(
        absl::StrCat("not every pool was published; node-0's log:\n",
                     daemons_[0]->Stderr()));
  }
  out_ << absl::StrFormat(
      "| %d daemons started %d ms apart: every pool published after | %.1f "
      "s |\n",
      o_.nodes, o_.spawn_interval_ms, absl::ToDoubleSeconds(**started));

  // (b) Idle.
  absl::SleepFor(absl::Seconds(5));
  if (absl::StatusOr<std::vector<Request>> r = TakeRequests(); !r.ok()) {
    return r.status();
  }
  const absl::Time idle0 = absl::Now();
  const int64_t ticks0 = DaemonTicksNs();
  absl::StatusOr<ProcessUsage> api0 = ReadUsage(api_server_->pid());
  absl::SleepFor(absl::Seconds(o_.idle_s));
  absl::StatusOr<std::vector<Request>> idle = TakeRequests();
  if (!idle.ok()) return idle.status();
  const absl::Duration idle_window = absl::Now() - idle0;
  const int64_t ticks1 = DaemonTicksNs();
  absl::StatusOr<ProcessUsage> api1 = ReadUsage(api_server_->pid());
  std::map<std::string, int> idle_kinds;
  int idle_requests = 0;
  for (const Request& r : *idle) {
    if (!r.daemon) continue;
    ++idle_requests;
    ++idle_kinds[Kind(r)];
  }
  const double node_hours =
      o_.nodes * absl::ToDoubleSeconds(idle_window) / 3600;
  std::string kinds;
  for (const auto& [k, n] : idle_kinds) {
    absl::StrAppend(&kinds, kinds.empty() ? "" : ", ", n, " ", k);
  }
  out_ << absl::StrFormat(
      "| idle %.0f s: daemon requests (%s); per node-hour | %d; %.2f |\n",
      absl::ToDoubleSeconds(idle_window), kinds.empty() ? "none" : kinds,
      idle_requests, idle_requests / node_hours);
  const double minutes = absl::ToDoubleSeconds(idle_window) / 60;
  out_ << absl::StrFormat(
      "| idle: daemons' CPU per node per minute (utime+stime); resident "
      "memory per node | %.1f ms; %.1f MiB |\n",
      (ticks1 - ticks0) / 1e6 / o_.nodes / minutes,
      DaemonRssKb() / 1024.0 / o_.nodes);
  if (api0.ok() && api1.ok()) {
    out_ << absl::StrFormat(
        "| idle: the emulator's CPU per minute (%d watches open) | %.0f ms |\n",
        o_.nodes, (api1->ticks_ns - api0->ticks_ns) / 1e6 / minutes);
  }

  // (c) Outage.
  const absl::Time t0 = absl::Now();
  gate_->SetOpen(false);
  if (!o_.keep_slices) {
    absl::SleepFor(absl::Seconds(1));
    kube::ListOptions all;
    if (absl::Status s = api_->DeleteCollection(kSlices, all); !s.ok()) {
      return s;
    }
  }
  absl::SleepFor(t0 + absl::Seconds(o_.outage_s) - absl::Now());
  if (absl::StatusOr<std::vector<Request>> r = TakeRequests(); !r.ok()) {
    return r.status();
  }
  const absl::Time t1 = absl::Now();
  gate_->SetOpen(true);
  std::map<int, double> republished;
  absl::StatusOr<std::optional<absl::Duration>> back =
      WaitPublished(t1, absl::Seconds(o_.recover_timeout_s),
                    absl::Milliseconds(100), &republished);
  if (!back.ok()) return back.status();
  // Then until every node watches again (its watch backs off up to 45 s
  // after a minute of failures), at most 60 s more.
  std::vector<Request> after;
  const absl::Time watch_deadline = absl::Now() + absl::Seconds(60);
  std::set<int> watching;
  for (;;) {
    absl::StatusOr<std::vector<Request>> r = TakeRequests();
    if (!r.ok()) return r.status();
    for (Request& q : *r) {
      if (q.daemon && q.watch() && q.node >= 0) watching.insert(q.node);
      after.push_back(std::move(q));
    }
    if (static_cast<int>(watching.size()) == o_.nodes ||
        absl::Now() > watch_deadline) {
      break;
    }
    absl::SleepFor(absl::Seconds(1));
  }
  const double t1s = Seconds(t1);
  std::map<int, double> first_list, first_watch;
  std::map<int64_t, int> per_second, per_100ms;
  int in_first_10s = 0;
  for (const Request& r : after) {
    if (!r.daemon) continue;
    const double at = r.time - t1s;
    ++per_second[static_cast<int64_t>(std::floor(at))];
    ++per_100ms[static_cast<int64_t>(std::floor(at * 10))];
    if (at < 10) ++in_first_10s;
    if (r.node < 0) continue;
    if (r.list() && r.status == 200) first_list.try_emplace(r.node, at);
    if (r.watch()) first_watch.try_emplace(r.node, at);
  }
  auto values = [](const std::map<int, double>& m) {
    std::vector<double> v;
    for (const auto& [k, x] : m) v.push_back(x);
    return v;
  };
  int64_t resets = 0;
  int64_t reset_peak = 0;
  const std::map<int64_t, int64_t> reset_per_second = gate_->ResetPerSecond();
  const int64_t t0_second = static_cast<int64_t>(Seconds(t0));
  std::string outage_hist;  // the outage's first 10 s, and its last 5
  for (int64_t sec = t0_second; sec <= static_cast<int64_t>(t1s); ++sec) {
    auto it = reset_per_second.find(sec);
    const int64_t n = it == reset_per_second.end() ? 0 : it->second;
    resets += n;
    reset_peak = std::max(reset_peak, n);
    if (sec - t0_second < 10 || static_cast<int64_t>(t1s) - sec < 5) {
      absl::StrAppend(&outage_hist, outage_hist.empty() ? "" : " ", n);
    } else if (sec - t0_second == 10) {
      absl::StrAppend(&outage_hist, " ...");
    }
  }
  out_ << absl::StrFormat(
      "| outage %.0f s (%s): connection attempts refused (reset), total; "
      "per second, mean / peak | %d; %.1f / %d |\n",
      o_.outage_s,
      o_.keep_slices ? "slices kept" : "every slice deleted meanwhile", resets,
      resets / o_.outage_s, reset_peak);
  out_ << "| the same per second, in the outage's first 10 s ... its last 5 | "
       << outage_hist << " |\n";
  out_ << absl::StrFormat(
      "| after the outage: every pool published again after | %s |\n",
      back->has_value()
          ? absl::StrFormat("%.2f s", absl::ToDoubleSeconds(**back))
          : absl::StrFormat("not within %.0f s", o_.recover_timeout_s));
  out_ << "| each node's first LIST answered, after the gate opened: min / "
          "p50 / p90 / max | "
       << Spread(values(first_list)) << " |\n";
  out_ << "| each pool seen published again (listed every 100 ms): min / "
          "p50 / p90 / max | "
       << Spread(values(republished)) << " |\n";
  out_ << "| each node's first watch: min / p50 / p90 / max | "
       << Spread(values(first_watch)) << " |\n";
  int peak_s = 0, peak_100 = 0;
  for (const auto& [s, n] : per_second) peak_s = std::max(peak_s, n);
  for (const auto& [s, n] : per_100ms) peak_100 = std::max(peak_100, n);
  out_ << absl::StrFormat(
      "| daemon requests in the first 10 s; peak per second; peak per 100 ms "
      "| %d; %d; %d |\n",
      in_first_10s, peak_s, peak_100);
  // The histogram: requests per second after the gate opened.
  std::string hist;
  for (int64_t s = 0;
       s <= (per_second.empty() ? 0 : per_second.rbegin()->first); ++s) {
    auto it = per_second.find(s);
    absl::StrAppend(&hist, hist.empty() ? "" : " ",
                    it == per_second.end() ? 0 : it->second);
  }
  out_ << "| daemon requests per second from the gate's opening (s 0, 1, 2, "
          "...) | "
       << hist << " |\n";
  std::cout << "| measure | value |\n|---|---|\n" << out_.str() << std::flush;
  StopDaemons();
  return absl::OkStatus();
}

}  // namespace
}  // namespace gdp::bench

int main(int argc, char** argv) {
  gdp::bench::Options o;
  CLI::App app{"N DRA daemons against one API server emulator"};
  gdp::bench::AddFixtureOptions(app, &o, /*required=*/true);
  app.add_option("--apiserver", o.apiserver,
                 "the API server emulator (tests/kube/apiserver.py)")
      ->required();
  app.add_option("--python", o.python, "the Python that runs it");
  app.add_option("--nodes", o.nodes, "daemons, each its own node and pool")
      ->check(CLI::Range(1, 1000));
  app.add_option("--idle", o.idle_s, "idle window, seconds")
      ->check(CLI::Range(1.0, 3600.0));
  app.add_option("--outage", o.outage_s, "API server outage, seconds")
      ->check(CLI::Range(1.0, 600.0));
  app.add_option("--recover-timeout", o.recover_timeout_s,
                 "most seconds to wait for every pool after the outage")
      ->check(CLI::Range(1.0, 600.0));
  app.add_option("--spawn-interval-ms", o.spawn_interval_ms,
                 "between two daemon starts")
      ->check(CLI::Range(0, 10000));
  app.add_flag("--keep-slices", o.keep_slices,
               "do not delete the slices during the outage");
  app.add_option("--dir", o.dir, "work directory (removed first)");
  CLI11_PARSE(app, argc, argv);
  if (o.dir.empty()) o.dir = absl::StrCat("/tmp/gdp-many-nodes-", getpid());
  gdp::bench::Bench bench(o);
  absl::Status s = bench.Run();
  if (!s.ok()) {
    std::cerr << "many_nodes_bench: " << s << "\n";
    return 1;
  }
  std::filesystem::remove_all(o.dir);
  return 0;
}
