// Measures GetPreferredAllocation round trips through the plugin's socket
// (gRPC included), one container request per call, in two cases:
//   mixed: a seeded mix resembling a busy node. Each request's available set
//     keeps every healthy device with one probability drawn from 30-100%;
//     its size is drawn from 1 to min(available, limit), where the limit is
//     the number of physical GPUs, or 16 for replica resources; a quarter of
//     the requests must include 1-2 of the available devices.
//   worst case (for the exact chooser): every device available, half the
//     physical GPUs asked for, nothing that must be included.
// Every answer is checked: a failed call, a wrong size, an ID not available
// or repeated, or a must-include ID left out ends the run with exit 1.
// Usage: preferred_bench --plugin BIN --fake-lib DIR --machine FILE
//        --rootfs-tool BIN [--calls N] [--seed N] [--socket-name NAME]
//        [--plugin-arg ARG]...  ("{root}" in an argument: the fixture root)
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/fixture.h"
#include "testing/fake_kubelet.h"
#include "testing/subprocess.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp::bench {
namespace {

namespace fs = std::filesystem;
using testing::Subprocess;
using Request = v1beta1::ContainerPreferredAllocationRequest;

struct Options : FixtureOptions {
  std::string socket_name = "nvidia-gpu.sock";
  int calls = 5000;
  uint64_t seed = 1;
};

// The healthy devices' IDs, and how many physical GPUs they are on (a
// replica's ID is "<gpu id>::<k>").
struct Devices {
  std::vector<std::string> ids;
  int gpus = 0;
  bool replicas = false;
};

Devices ReadDevices(const v1beta1::ListAndWatchResponse& list) {
  Devices d;
  std::set<std::string> gpus;
  for (const auto& dev : list.devices()) {
    if (dev.health() != "Healthy") continue;
    d.ids.push_back(dev.id());
    size_t at = dev.id().find("::");
    d.replicas |= at != std::string::npos;
    gpus.insert(dev.id().substr(0, at));
  }
  d.gpus = static_cast<int>(gpus.size());
  return d;
}

std::vector<Request> MixedRequests(const Devices& d, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  const int limit = d.replicas ? 16 : d.gpus;
  std::vector<Request> out(n);
  for (Request& r : out) {
    double keep = std::uniform_real_distribution<double>(0.3, 1.0)(rng);
    std::vector<std::string> avail;
    for (const std::string& id : d.ids) {
      if (std::bernoulli_distribution(keep)(rng)) avail.push_back(id);
    }
    if (avail.empty()) avail.push_back(d.ids[uniform(0, d.ids.size() - 1)]);
    int size = uniform(1, std::min<int>(avail.size(), limit));
    for (const std::string& id : avail) r.add_available_deviceids(id);
    r.set_allocation_size(size);
    if (uniform(0, 3) == 0) {
      std::vector<std::string> must;
      std::sample(avail.begin(), avail.end(), std::back_inserter(must),
                  std::min(size, uniform(1, 2)), rng);
      for (const std::string& id : must) r.add_must_include_deviceids(id);
    }
  }
  return out;
}

// One checked round trip: its time in microseconds, or on a failed call or
// a wrong answer an error naming the problem, the request and the answer.
absl::StatusOr<double> TimeOne(v1beta1::DevicePlugin::Stub& stub,
                               const Request& r) {
  v1beta1::PreferredAllocationRequest req;
  *req.add_container_requests() = r;
  v1beta1::PreferredAllocationResponse resp;
  grpc::ClientContext ctx;
  absl::Time t0 = absl::Now();
  grpc::Status s = stub.GetPreferredAllocation(&ctx, req, &resp);
  double us = absl::ToDoubleMicroseconds(absl::Now() - t0);
  auto fail = [&](const std::string& why) {
    return absl::InternalError(absl::StrCat(
        "GetPreferredAllocation: ", why, "\nrequest: ", r.ShortDebugString(),
        "\nresponse: ", resp.ShortDebugString()));
  };
  if (!s.ok()) return fail("call failed: " + s.error_message());
  if (resp.container_responses_size() != 1)
    return fail("not one container answer");
  const auto& got = resp.container_responses(0).deviceids();
  if (got.size() != r.allocation_size())
    return fail("answer of the wrong size");
  std::set<std::string> avail(r.available_deviceids().begin(),
                              r.available_deviceids().end());
  std::set<std::string> chosen;
  for (const std::string& id : got) {
    if (!avail.contains(id))
      return fail("answer holds an ID not available: " + id);
    if (!chosen.insert(id).second) return fail("answer repeats an ID: " + id);
  }
  for (const std::string& id : r.must_include_deviceids()) {
    if (!chosen.contains(id)) return fail("answer lacks must-include ID " + id);
  }
  return us;
}

// Times each of `requests` in turn, appending to *us (when given); stops at
// the first error.
absl::Status TimeAll(v1beta1::DevicePlugin::Stub& stub,
                     const std::vector<Request>& requests,
                     std::vector<double>* us) {
  for (const Request& r : requests) {
    absl::StatusOr<double> t = TimeOne(stub, r);
    if (!t.ok()) return t.status();
    if (us != nullptr) us->push_back(*t);
  }
  return absl::OkStatus();
}

std::string Row(const std::string& name, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return absl::StrFormat("| %s | %d | %.1f | %.1f | %.1f |\n", name, us.size(),
                         us[us.size() / 2], us[us.size() * 99 / 100],
                         us.back());
}

// Runs both cases with the fixture root and sockets under `dir`.
int Run(const Options& o, const fs::path& dir) {
  absl::StatusOr<std::vector<std::string>> argv = MakeFixture(o, dir);
  if (!argv.ok()) {
    std::cerr << argv.status().message() << "\n";
    return 1;
  }
  testing::FakeKubelet kubelet(dir / "kp");
  Subprocess plugin({.argv = *argv,
                     .env = PluginEnv(o),
                     .stderr_path = (dir / "plugin.err").string()});
  if (kubelet.WaitForRegistrations(1, absl::Seconds(10)) ==
      absl::InfinitePast()) {
    std::cerr << "plugin did not register:\n" << plugin.Stderr();
    return 1;
  }
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + (dir / "kp" / o.socket_name).string(),
                          grpc::InsecureChannelCredentials()));
  v1beta1::ListAndWatchResponse list;
  {
    grpc::ClientContext ctx;
    auto stream = stub->ListAndWatch(&ctx, {});
    if (!stream->Read(&list)) {
      std::cerr << "ListAndWatch sent nothing:\n" << plugin.Stderr();
      return 1;
    }
    ctx.TryCancel();
    stream->Finish();
  }
  Devices d = ReadDevices(list);
  if (d.gpus < 2) {
    std::cerr << "need 2 or more GPUs, have " << d.gpus << "\n";
    return 1;
  }

  std::vector<Request> warm_up = MixedRequests(d, 200, o.seed + 1);
  std::vector<Request> mixed = MixedRequests(d, o.calls, o.seed);
  Request all;
  for (const std::string& id : d.ids) all.add_available_deviceids(id);
  all.set_allocation_size(d.gpus / 2);
  std::vector<Request> worst(o.calls, all);
  std::vector<double> mixed_us, worst_us;
  absl::Status s = TimeAll(*stub, warm_up, nullptr);
  if (s.ok()) s = TimeAll(*stub, mixed, &mixed_us);
  if (s.ok()) s = TimeAll(*stub, worst, &worst_us);
  if (!s.ok()) {
    std::cerr << s.message() << "\n";
    return 1;
  }

  std::cout << absl::StrFormat(
                   "%d healthy devices on %d GPUs; worst case asks for %d.\n\n",
                   d.ids.size(), d.gpus, d.gpus / 2)
            << "| case | calls | p50 us | p99 us | max us |\n"
            << "|---|---|---|---|---|\n"
            << Row("mixed", mixed_us) << Row("worst case", worst_us);
  plugin.Signal(SIGTERM);
  plugin.Wait(absl::Seconds(5));
  return 0;
}

}  // namespace
}  // namespace gdp::bench

int main(int argc, char** argv) {
  CLI::App app{"GetPreferredAllocation benchmark"};
  gdp::bench::Options o;
  AddFixtureOptions(app, &o, /*required=*/true);
  app.add_option("--socket-name", o.socket_name, "the resource's socket");
  app.add_option("--calls", o.calls, "timed calls per case");
  app.add_option("--seed", o.seed, "seed of the mixed requests");
  CLI11_PARSE(app, argc, argv);
  if (o.calls < 1) {
    std::cerr << "--calls must be at least 1\n";
    return 64;
  }
  std::filesystem::path dir = std::filesystem::path("/tmp") /
                              ("gdp-pbench-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  int rc = gdp::bench::Run(o, dir);
  std::filesystem::remove_all(dir);
  return rc;
}
