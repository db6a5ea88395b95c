#include "bench/dra_prepare.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "dra/v1/api.grpc.pb.h"
#include "util/atomic_file.h"
#include "util/file_watcher.h"

namespace gdp::bench {
namespace {

namespace fs = std::filesystem;
namespace dra_v1 = k8s::io::kubelet::pkg::apis::dra::v1;
using Stub = dra_v1::DRAPlugin::Stub;

constexpr char kClaims[] =
    "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims";
constexpr int kGpus = 8;
constexpr int kWarmClaims = 20, kWarmCalls = 200, kRounds = 16;
// The first call after a pause is slower (for the echo too): each block
// starts with this many calls not timed.
constexpr int kUntimed = 2;

struct Claim {
  std::string name, uid, device;
};

std::unique_ptr<Stub> DialDra(const std::string& socket) {
  return dra_v1::DRAPlugin::NewStub(grpc::CreateChannel(
      "unix:" + socket, grpc::InsecureChannelCredentials()));
}

template <typename Request>
Request RequestFor(const Claim& c) {
  Request req;
  auto* r = req.add_claims();
  r->set_namespace_("ns");
  r->set_name(c.name);
  r->set_uid(c.uid);
  return req;
}

// One NodePrepareResources of `c`: its round trip in microseconds.
// Result on failure: Internal when the call fails, or its answer for `c`
// has an error or is not exactly device c.device.
absl::StatusOr<double> Prepare(Stub& stub, const Claim& c) {
  auto req = RequestFor<dra_v1::NodePrepareResourcesRequest>(c);
  dra_v1::NodePrepareResourcesResponse resp;
  grpc::ClientContext ctx;
  const absl::Time t0 = absl::Now();
  grpc::Status s = stub.NodePrepareResources(&ctx, req, &resp);
  const double us = absl::ToDoubleMicroseconds(absl::Now() - t0);
  if (!s.ok()) {
    return absl::InternalError(absl::StrCat("NodePrepareResources of ", c.name,
                                            ": ", s.error_message()));
  }
  auto it = resp.claims().find(c.uid);
  if (it == resp.claims().end() || !it->second.error().empty() ||
      it->second.devices_size() != 1 ||
      it->second.devices(0).device_name() != c.device) {
    return absl::InternalError(absl::StrCat("NodePrepareResources of ", c.name,
                                            " answered ",
                                            resp.ShortDebugString()));
  }
  return us;
}

// One NodeUnprepareResources of `c`. Result on failure: Internal when the
// call fails or answers an error for `c`.
absl::Status Unprepare(Stub& stub, const Claim& c) {
  auto req = RequestFor<dra_v1::NodeUnprepareResourcesRequest>(c);
  dra_v1::NodeUnprepareResourcesResponse resp;
  grpc::ClientContext ctx;
  grpc::Status s = stub.NodeUnprepareResources(&ctx, req, &resp);
  auto it = resp.claims().find(c.uid);
  if (!s.ok() || it == resp.claims().end() || !it->second.error().empty()) {
    return absl::InternalError(absl::StrCat("NodeUnprepareResources of ",
                                            c.name, ": ", s.error_message(),
                                            resp.ShortDebugString()));
  }
  return absl::OkStatus();
}

// A GET of claim `c`: microseconds. Result on failure: the client's error.
absl::StatusOr<double> GetClaim(kube::Client& api, const Claim& c) {
  const absl::Time t0 = absl::Now();
  absl::StatusOr<nlohmann::json> got =
      api.Get(absl::StrCat(kClaims, "/", c.name));
  if (!got.ok()) return got.status();
  return absl::ToDoubleMicroseconds(absl::Now() - t0);
}

// The files a fresh Prepare writes (and Unprepare removes and rewrites),
// of the sizes the plugin's are, in a directory of their own on the same
// file system.
class FileFloor {
 public:
  FileFloor(const fs::path& dir, size_t spec_bytes, size_t checkpoint_bytes)
      : spec_(dir / "cdi/spec.json"),
        checkpoint_(dir / "plugins/checkpoint.json"),
        spec_text_(spec_bytes, 'x'),
        checkpoint_text_(checkpoint_bytes, 'x'),
        empty_checkpoint_(checkpoint_bytes / 3, 'x') {}

  // The two writes, microseconds; then Unprepare's removal and rewrite
  // (of a checkpoint a third as large, about what one without the claim
  // is).
  // Result on failure: the write's error.
  absl::StatusOr<double> Once() {
    const absl::Time t0 = absl::Now();
    absl::Status s = WriteFileAtomically(spec_, spec_text_, 0644);
    if (s.ok()) s = WriteFileAtomically(checkpoint_, checkpoint_text_, 0600);
    const double us = absl::ToDoubleMicroseconds(absl::Now() - t0);
    if (s.ok()) s = RemoveFile(spec_);
    if (s.ok()) s = WriteFileAtomically(checkpoint_, empty_checkpoint_, 0600);
    if (!s.ok()) return s;
    return us;
  }

 private:
  const std::string spec_, checkpoint_;
  const std::string spec_text_, checkpoint_text_, empty_checkpoint_;
};

// Calls `one` kUntimed + `n` times, appending the results of the last `n`
// to `out` (null: dropped).
template <typename F>
absl::Status Repeat(int n, std::vector<double>* out, F one) {
  for (int i = 0; i < kUntimed + n; ++i) {
    absl::StatusOr<double> us = one(i);
    if (!us.ok()) return us.status();
    if (out != nullptr && i >= kUntimed) out->push_back(*us);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PrepareTimes> TimePrepares(DraEnv& env,
                                          const std::string& endpoint,
                                          const std::string& self, int claims,
                                          int calls) {
  std::vector<Claim> all;
  const int needed = kWarmClaims + claims + (kRounds + 1) * kUntimed;
  for (int i = 0; i < needed + 1; ++i) {
    Claim c{absl::StrCat("claim-", i), "", absl::StrCat("gpu-", i % kGpus)};
    absl::StatusOr<std::string> uid = env.CreateClaim(c.name, c.device);
    if (!uid.ok()) return uid.status();
    c.uid = *uid;
    all.push_back(c);
  }
  const Claim kept = all.back();
  all.pop_back();
  auto plugin = DialDra(endpoint);
  if (absl::StatusOr<double> us = Prepare(*plugin, kept); !us.ok()) {
    return us.status();
  }
  // The floor's files are as large as the plugin's for one claim.
  const fs::path plugin_dir = env.dir() / "plugins" / kDraDriver;
  const size_t spec_bytes =
      ReadFileOrEmpty(
          (env.dir() / "cdi" /
           absl::StrCat("k8s.gpu.nvidia.com-claim_", kept.uid, ".json"))
              .string())
          .size();
  const size_t checkpoint_bytes =
      ReadFileOrEmpty((plugin_dir / "gdp-checkpoint.json").string()).size();
  if (spec_bytes == 0 || checkpoint_bytes == 0) {
    return absl::InternalError("no CDI spec or checkpoint of a prepared claim");
  }
  FileFloor floor(env.dir() / "floor", spec_bytes, checkpoint_bytes);

  const std::string echo_socket = (env.dir() / "echo.sock").string();
  testing::Subprocess echo({.argv = {self, "--serve-echo", echo_socket}});
  if (!WaitForSocket(echo_socket, absl::Seconds(10))) {
    return absl::InternalError("the echo server did not start");
  }
  auto echo_stub = DialDra(echo_socket);
  absl::StatusOr<std::unique_ptr<kube::Client>> api = env.NewClient();
  if (!api.ok()) return api.status();
  Claim echoed = kept;
  echoed.device = "gpu-" + kept.uid;  // FakeDraPlugin's default answer

  PrepareTimes t;
  size_t next = 0;
  // Fresh claims are prepared (timed) and unprepared (not timed); the file
  // writes' floor follows.
  auto fresh = [&](int n, std::vector<double>* out,
                   std::vector<double>* writes) -> absl::Status {
    absl::Status s = Repeat(n, out, [&](int) -> absl::StatusOr<double> {
      const Claim& c = all[next++];
      absl::StatusOr<double> us = Prepare(*plugin, c);
      if (!us.ok()) return us;
      if (absl::Status u = Unprepare(*plugin, c); !u.ok()) return u;
      return us;
    });
    if (!s.ok()) return s;
    return Repeat(n, writes, [&](int) { return floor.Once(); });
  };
  auto others = [&](int n, PrepareTimes* out) -> absl::Status {
    absl::Status s = Repeat(n, out ? &out->kept : nullptr,
                            [&](int) { return Prepare(*plugin, kept); });
    if (s.ok()) {
      s = Repeat(n, out ? &out->echo : nullptr,
                 [&](int) { return Prepare(*echo_stub, echoed); });
    }
    if (s.ok()) {
      s = Repeat(n, out ? &out->get : nullptr, [&](int i) {
        return GetClaim(**api, all[(next + i) % all.size()]);
      });
    }
    return s;
  };
  absl::Status s = fresh(kWarmClaims, nullptr, nullptr);
  if (s.ok()) s = others(kWarmCalls, nullptr);
  for (int r = 0; r < kRounds && s.ok(); ++r) {
    s = fresh(claims * (r + 1) / kRounds - claims * r / kRounds, &t.fresh,
              &t.writes);
    if (s.ok()) {
      s = others(calls * (r + 1) / kRounds - calls * r / kRounds, &t);
    }
  }
  if (s.ok()) s = Unprepare(*plugin, kept);
  if (!s.ok()) return s;
  return t;
}

}  // namespace gdp::bench
