#include "dra/dra_service.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dra/dra_metrics.h"
#include "dra/k8s_names.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "drahealth/v1alpha1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "rpc/device_stream.h"
#include "util/logging.h"
#include "util/quote.h"

namespace gdp::dra {
namespace {

namespace dra_v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace dra_v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

// The kubelet's limit on a health message.
constexpr size_t kMaxHealthMessage = 1024;

// The types of one version of the DRAPlugin service.
template <typename NS>
struct Api;
template <>
struct Api<dra_v1::DRAPlugin> {
  using Service = dra_v1::DRAPlugin::AsyncService;
  using PrepareRequest = dra_v1::NodePrepareResourcesRequest;
  using PrepareResponse = dra_v1::NodePrepareResourcesResponse;
  using UnprepareRequest = dra_v1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = dra_v1::NodeUnprepareResourcesResponse;
  static constexpr const char* kName = "v1";
};
template <>
struct Api<dra_v1beta1::DRAPlugin> {
  using Service = dra_v1beta1::DRAPlugin::AsyncService;
  using PrepareRequest = dra_v1beta1::NodePrepareResourcesRequest;
  using PrepareResponse = dra_v1beta1::NodePrepareResourcesResponse;
  using UnprepareRequest = dra_v1beta1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = dra_v1beta1::NodeUnprepareResourcesResponse;
  static constexpr const char* kName = "v1beta1";
};

// The kubelet's claims come from the API server; anything else at this edge
// is refused before it reaches a path, a log line or an answer.
constexpr size_t kMaxClaimsPerCall = 256;
// A per-claim error in an answer, in bytes: 256 of them stay far below the
// kubelet's 4 MiB message limit.
constexpr size_t kMaxClaimError = 4096;

// The claims of a call, checked. A UID that is not one fails the whole
// call (it could not key its own answer); a bad namespace or name fails
// only its claim, in `invalid` (by UID).
template <typename Claims>
absl::StatusOr<std::vector<ClaimRef>> CheckedRefs(
    const Claims& claims, std::map<std::string, std::string>& invalid) {
  if (static_cast<size_t>(claims.size()) > kMaxClaimsPerCall) {
    return absl::InvalidArgumentError(absl::StrCat(
        claims.size(), " claims in one call; at most ", kMaxClaimsPerCall));
  }
  std::vector<ClaimRef> out;
  out.reserve(claims.size());
  for (const auto& c : claims) {
    if (!IsUid(c.uid())) {
      return absl::InvalidArgumentError(
          absl::StrCat("claim UID ", Quote(c.uid(), 64),
                       " is not a UID (letters, digits and '-', at most 128)"));
    }
    if (!IsDnsLabel(c.namespace_()) || !IsDnsSubdomain(c.name())) {
      invalid[c.uid()] = absl::StrCat(
          "claim ", c.uid(), ": namespace ", Quote(c.namespace_(), 64),
          " and name ", Quote(c.name(), 64),
          " must be a DNS label and a DNS subdomain");
      continue;
    }
    out.push_back({c.namespace_(), c.name(), c.uid()});
  }
  return out;
}

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      std::string(s.message()));
}

void Count(const char* method, bool ok) {
  DraMetrics::Get().claims.With({method, ok ? "ok" : "failed"}).Increment();
}

// DRAPlugin of one version: both calls answered later by ClaimCalls, so
// no gRPC thread waits for the API server.
template <typename Version>
class DraPluginService final : public RpcService {
  using A = Api<Version>;
  using PrepareResponse = typename A::PrepareResponse;
  using UnprepareResponse = typename A::UnprepareResponse;

 public:
  explicit DraPluginService(ClaimCalls& calls)
      : calls_(calls),
        prepare_(DeferredUnary(
            &service_, &A::Service::RequestNodePrepareResources,
            [this](const auto& req, std::shared_ptr<CallBudget> caller,
                   DeferredReply<PrepareResponse> reply) {
              Prepare(req, std::move(caller), std::move(reply));
            })),
        unprepare_(DeferredUnary(
            &service_, &A::Service::RequestNodeUnprepareResources,
            [this](const auto& req, std::shared_ptr<CallBudget> caller,
                   DeferredReply<UnprepareResponse> reply) {
              Unprepare(req, std::move(caller), std::move(reply));
            })) {}

  grpc::Service* grpc_service() override { return &service_; }

  void Arm(CallQueue& queue) override {
    UnaryCall<typename A::PrepareRequest, PrepareResponse>::Arm(prepare_,
                                                                queue);
    UnaryCall<typename A::UnprepareRequest, UnprepareResponse>::Arm(unprepare_,
                                                                    queue);
  }

 private:
  void Prepare(const typename A::PrepareRequest& req,
               std::shared_ptr<CallBudget> caller,
               DeferredReply<PrepareResponse> reply) {
    const auto start = std::chrono::steady_clock::now();
    std::map<std::string, std::string> invalid;
    absl::StatusOr<std::vector<ClaimRef>> claims =
        CheckedRefs(req.claims(), invalid);
    if (!claims.ok()) {
      LOG_WARN("NodePrepareResources ({}) refused: {}", A::kName,
               claims.status().message());
      reply(ToGrpc(claims.status()), PrepareResponse());
      return;
    }
    VLOG(1, "NodePrepareResources ({}): {} claim(s)", A::kName,
         req.claims_size());
    calls_.Prepare(
        *claims, std::move(caller),
        [reply = std::move(reply), invalid = std::move(invalid),
         start](std::map<std::string, PrepareResult> results) {
          PrepareResponse resp;
          for (const auto& [uid, error] : invalid) {
            Count("prepare", false);
            (*resp.mutable_claims())[uid].set_error(error);
          }
          for (auto& [uid, r] : results) {
            auto& out = (*resp.mutable_claims())[uid];
            Count("prepare", r.error.empty());
            if (!r.error.empty()) {
              out.set_error(CutText(r.error, kMaxClaimError));
              continue;
            }
            for (const PreparedDevice& d : r.devices) {
              auto* w = out.add_devices();
              for (const std::string& request : d.requests) {
                w->add_request_names(request);
              }
              w->set_pool_name(d.pool);
              w->set_device_name(d.device);
              for (const std::string& id : d.cdi_ids) {
                w->add_cdi_device_ids(id);
              }
              // v1 only: v1beta1's Device has no share_id.
              if constexpr (requires { w->set_share_id(d.share_id); }) {
                if (!d.share_id.empty()) w->set_share_id(d.share_id);
              }
            }
          }
          DraMetrics::Get().duration.With({"prepare"}).ObserveSince(start);
          if (!reply(grpc::Status::OK, std::move(resp))) {
            VLOG(1,
                 "NodePrepareResources ({}): the caller went before the "
                 "answer",
                 A::kName);
          }
        });
  }

  void Unprepare(const typename A::UnprepareRequest& req,
                 std::shared_ptr<CallBudget> caller,
                 DeferredReply<UnprepareResponse> reply) {
    const auto start = std::chrono::steady_clock::now();
    std::map<std::string, std::string> invalid;
    absl::StatusOr<std::vector<ClaimRef>> claims =
        CheckedRefs(req.claims(), invalid);
    if (!claims.ok()) {
      LOG_WARN("NodeUnprepareResources ({}) refused: {}", A::kName,
               claims.status().message());
      reply(ToGrpc(claims.status()), UnprepareResponse());
      return;
    }
    VLOG(1, "NodeUnprepareResources ({}): {} claim(s)", A::kName,
         req.claims_size());
    calls_.Unprepare(
        *claims, std::move(caller),
        [reply = std::move(reply), invalid = std::move(invalid),
         start](std::map<std::string, std::string> errors) {
          UnprepareResponse resp;
          for (const auto& [uid, error] : invalid) {
            Count("unprepare", false);
            (*resp.mutable_claims())[uid].set_error(error);
          }
          for (auto& [uid, error] : errors) {
            Count("unprepare", error.empty());
            (*resp.mutable_claims())[uid].set_error(
                CutText(error, kMaxClaimError));
          }
          DraMetrics::Get().duration.With({"unprepare"}).ObserveSince(start);
          reply(grpc::Status::OK, std::move(resp));
        });
  }

  ClaimCalls& calls_;
  typename A::Service service_;
  const UnaryMethod<typename A::PrepareRequest, PrepareResponse> prepare_;
  const UnaryMethod<typename A::UnprepareRequest, UnprepareResponse> unprepare_;
};

class HealthService final : public RpcService {
  using Response = v1alpha1::NodeWatchResourcesResponse;

 public:
  HealthService(DeviceSet& devices, std::string pool, HealthStreams& streams)
      : watch_(DeviceStream(
            &service_,
            &v1alpha1::DRAResourceHealth::AsyncService::
                RequestNodeWatchResources,
            devices,
            [pool = std::move(pool)](const DeviceList& list, Response* out) {
              Fill(pool, list, out);
            },
            [&streams](std::function<void()> refresh) {
              VLOG(1, "NodeWatchResources stream opened");
              const uint64_t token = streams.Add(std::move(refresh));
              return std::function<void()>([&streams, token] {
                streams.Remove(token);
                VLOG(1, "NodeWatchResources stream closed");
              });
            })) {}

  grpc::Service* grpc_service() override { return &service_; }

  void Arm(CallQueue& queue) override {
    DeviceStreamCall<v1alpha1::NodeWatchResourcesRequest, Response>::Arm(watch_,
                                                                         queue);
  }

 private:
  // Each device's health in pool `pool`; the message is the unhealthy
  // reason, at most kMaxHealthMessage bytes.
  static void Fill(const std::string& pool, const DeviceList& list,
                   Response* out) {
    const int64_t now = absl::ToUnixSeconds(absl::Now());
    for (const Device& d : list.devices) {
      v1alpha1::DeviceHealth* h = out->add_devices();
      h->mutable_device()->set_pool_name(pool);
      h->mutable_device()->set_device_name(d.id);
      h->set_health(d.health == Health::kHealthy ? v1alpha1::HEALTHY
                                                 : v1alpha1::UNHEALTHY);
      h->set_last_updated_time(now);
      h->set_message(CutText(d.unhealthy_reason, kMaxHealthMessage));
    }
  }

  v1alpha1::DRAResourceHealth::AsyncService service_;
  const DeviceStreamMethod<v1alpha1::NodeWatchResourcesRequest, Response>
      watch_;
};

class RegistrationService final : public RpcService {
  using Service = pluginregistration::Registration::AsyncService;

 public:
  RegistrationService(RegistrationInfo info, RegistrationState& state)
      : info_(std::move(info)),
        state_(state),
        get_info_(Unary(&service_, &Service::RequestGetInfo,
                        [this](const auto& req, auto* resp) {
                          return GetInfo(req, resp);
                        })),
        notify_(Unary(&service_, &Service::RequestNotifyRegistrationStatus,
                      [this](const auto& req, auto* resp) {
                        return NotifyRegistrationStatus(req, resp);
                      })) {}

  grpc::Service* grpc_service() override { return &service_; }

  void Arm(CallQueue& queue) override {
    UnaryCall<pluginregistration::InfoRequest,
              pluginregistration::PluginInfo>::Arm(get_info_, queue);
    UnaryCall<pluginregistration::RegistrationStatus,
              pluginregistration::RegistrationStatusResponse>::Arm(notify_,
                                                                   queue);
  }

 private:
  grpc::Status GetInfo(const pluginregistration::InfoRequest&,
                       pluginregistration::PluginInfo* resp) {
    resp->set_type("DRAPlugin");
    resp->set_name(info_.driver_name);
    resp->set_endpoint(info_.endpoint);
    for (const std::string& v : info_.versions) resp->add_supported_versions(v);
    state_.InfoAsked();
    VLOG(1, "GetInfo: the kubelet asked for our plugin info");
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(
      const pluginregistration::RegistrationStatus& req,
      pluginregistration::RegistrationStatusResponse*) {
    state_.Notified(req.plugin_registered(), req.error());
    DraMetrics::Get()
        .registrations.With({req.plugin_registered() ? "ok" : "failed"})
        .Increment();
    if (req.plugin_registered()) {
      LOG_INFO("Registered DRA driver {} with the kubelet (endpoint {})",
               info_.driver_name, info_.endpoint);
    } else {
      LOG_ERROR("The kubelet refused DRA driver {}: {}", info_.driver_name,
                req.error());
    }
    return grpc::Status::OK;
  }

  const RegistrationInfo info_;
  RegistrationState& state_;
  Service service_;
  const UnaryMethod<pluginregistration::InfoRequest,
                    pluginregistration::PluginInfo>
      get_info_;
  const UnaryMethod<pluginregistration::RegistrationStatus,
                    pluginregistration::RegistrationStatusResponse>
      notify_;
};

}  // namespace

void RegistrationState::InfoAsked() {
  absl::MutexLock lock(&mu_);
  // A new round: the kubelet (re)started or found our socket anew.
  registered_ = false;
}

void RegistrationState::Notified(bool registered, const std::string& error) {
  absl::MutexLock lock(&mu_);
  registered_ = registered;
  if (registered) {
    ++registrations_;
    error_.clear();
  } else {
    error_ = error;
  }
}

void RegistrationState::Reset() {
  absl::MutexLock lock(&mu_);
  registered_ = false;
}

bool RegistrationState::registered() const {
  absl::MutexLock lock(&mu_);
  return registered_;
}

int RegistrationState::registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

std::string RegistrationState::last_error() const {
  absl::MutexLock lock(&mu_);
  return error_;
}

void HealthStreams::SetOnOpen(std::function<void()> on_open) {
  absl::MutexLock lock(&mu_);
  on_open_ = std::move(on_open);
}

uint64_t HealthStreams::Add(std::function<void()> refresh) {
  absl::MutexLock lock(&mu_);
  const uint64_t token = next_++;
  streams_.emplace(token, std::move(refresh));
  if (on_open_) on_open_();
  return token;
}

void HealthStreams::Remove(uint64_t token) {
  absl::MutexLock lock(&mu_);
  streams_.erase(token);
}

size_t HealthStreams::RefreshAll() {
  absl::MutexLock lock(&mu_);
  for (auto& [token, refresh] : streams_) refresh();
  return streams_.size();
}

size_t HealthStreams::open() const {
  absl::MutexLock lock(&mu_);
  return streams_.size();
}

ServiceList RegistrationServices(const RegistrationInfo& info,
                                 RegistrationState& state) {
  ServiceList out;
  out.push_back(std::make_unique<RegistrationService>(info, state));
  return out;
}

ServiceList EndpointServices(ClaimCalls& calls, DeviceSet& devices,
                             const std::string& pool, HealthStreams& streams) {
  ServiceList out;
  out.push_back(std::make_unique<DraPluginService<dra_v1::DRAPlugin>>(calls));
  out.push_back(
      std::make_unique<DraPluginService<dra_v1beta1::DRAPlugin>>(calls));
  out.push_back(std::make_unique<HealthService>(devices, pool, streams));
  return out;
}

}  // namespace gdp::dra
