#include "dra_client.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "plugin_client.h"

namespace gdp::dpctl {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(100);

// Converts between the v1 and v1beta1 forms of a message through the wire
// format, which the two versions share. Fields only `To` knows stay unset;
// fields only `From` knows are kept as unknown fields.
template <typename To, typename From>
To Convert(const From& from) {
  To to;
  to.ParseFromString(from.SerializeAsString());
  return to;
}

template <typename Request>
Request MakeRequest(const std::vector<ClaimRef>& claims) {
  Request request;
  for (const ClaimRef& c : claims) {
    auto* claim = request.add_claims();
    claim->set_namespace_(c.ns);
    claim->set_name(c.name);
    claim->set_uid(c.uid);
  }
  return request;
}

}  // namespace

std::string ApiName(DraApi api) {
  return api == DraApi::kV1 ? "v1" : "v1beta1";
}

std::string ApiService(DraApi api) { return ApiName(api) + ".DRAPlugin"; }

absl::StatusOr<DraApi> ParseApi(absl::string_view name) {
  if (name == "v1") return DraApi::kV1;
  if (name == "v1beta1") return DraApi::kV1beta1;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown DRA API version \"", name, "\" (want v1 or v1beta1)"));
}

absl::StatusOr<ClaimRef> ParseClaimRef(absl::string_view spec) {
  std::vector<std::string> parts = absl::StrSplit(spec, '/');
  if (parts.size() != 3 ||
      std::any_of(parts.begin(), parts.end(),
                  [](const std::string& p) { return p.empty(); })) {
    return absl::InvalidArgumentError(
        absl::StrCat("claim \"", spec,
                     "\": want NAMESPACE/NAME/UID, three non-empty parts"));
  }
  return ClaimRef{parts[0], parts[1], parts[2]};
}

std::string ClaimRefText(const ClaimRef& claim) {
  return absl::StrCat(claim.ns, "/", claim.name, "/", claim.uid);
}

std::shared_ptr<DraClient> DraClient::Open(const std::string& socket_path) {
  const std::string target = UnixTarget(socket_path);
  grpc::ChannelArguments args;
  // Channels to one target would otherwise share a connection and its
  // reconnect backoff, so a plugin that restarted on the same path could be
  // seen late.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return std::shared_ptr<DraClient>(new DraClient(
      target, grpc::CreateCustomChannel(
                  target, grpc::InsecureChannelCredentials(), args)));
}

DraClient::DraClient(std::string target, std::shared_ptr<grpc::Channel> channel)
    : target_(std::move(target)),
      channel_(std::move(channel)),
      registration_(pluginregistration::Registration::NewStub(channel_)),
      v1_(drav1::DRAPlugin::NewStub(channel_)),
      v1beta1_(drav1beta1::DRAPlugin::NewStub(channel_)),
      health_(v1alpha1::DRAResourceHealth::NewStub(channel_)) {}

absl::Status DraClient::Connect(const ConnectOptions& options) {
  if (options.fail_fast && absl::StartsWith(target_, "unix:")) {
    const std::string path = target_.substr(absl::string_view("unix:").size());
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ", target_, ": no such socket"));
    }
  }
  const absl::Time deadline = absl::Now() + options.timeout;
  grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (options.fail_fast && state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ", target_));
    }
    if (cancelled() || (options.cancelled && options.cancelled())) {
      return absl::CancelledError(
          absl::StrCat("gave up connecting to ", target_));
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("cannot connect to ", target_, " within ",
                       absl::FormatDuration(options.timeout)));
    }
    channel_->WaitForStateChange(
        state, absl::ToChronoTime(std::min(deadline, now + kPollInterval)));
    state = channel_->GetState(/*try_to_connect=*/true);
  }
  return absl::OkStatus();
}

bool DraClient::cancelled() {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool DraClient::Track(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  active_.insert(context);
  return true;
}

void DraClient::Untrack(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  active_.erase(context);
}

void DraClient::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  // Contexts are untracked under mu_ before they are destroyed, so each one
  // here is alive.
  for (grpc::ClientContext* context : active_) context->TryCancel();
}

template <typename Response, typename Call>
absl::StatusOr<Response> DraClient::Unary(absl::Duration timeout, Call call) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!Track(&context)) return absl::CancelledError("connection closed");
  Response response;
  grpc::Status status = call(&context, &response);
  Untrack(&context);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<pluginregistration::PluginInfo> DraClient::GetInfo(
    absl::Duration timeout) {
  return Unary<pluginregistration::PluginInfo>(
      timeout, [this](grpc::ClientContext* context,
                      pluginregistration::PluginInfo* response) {
        return registration_->GetInfo(
            context, pluginregistration::InfoRequest(), response);
      });
}

absl::Status DraClient::NotifyRegistrationStatus(bool registered,
                                                 const std::string& error,
                                                 absl::Duration timeout) {
  pluginregistration::RegistrationStatus request;
  request.set_plugin_registered(registered);
  request.set_error(error);
  return Unary<pluginregistration::RegistrationStatusResponse>(
             timeout,
             [&](grpc::ClientContext* context,
                 pluginregistration::RegistrationStatusResponse* response) {
               return registration_->NotifyRegistrationStatus(context, request,
                                                              response);
             })
      .status();
}

absl::StatusOr<drav1::NodePrepareResourcesResponse> DraClient::Prepare(
    DraApi api, const std::vector<ClaimRef>& claims, absl::Duration timeout) {
  const auto request = MakeRequest<drav1::NodePrepareResourcesRequest>(claims);
  if (api == DraApi::kV1) {
    return Unary<drav1::NodePrepareResourcesResponse>(
        timeout, [&](grpc::ClientContext* context,
                     drav1::NodePrepareResourcesResponse* response) {
          return v1_->NodePrepareResources(context, request, response);
        });
  }
  const auto beta_request =
      Convert<drav1beta1::NodePrepareResourcesRequest>(request);
  absl::StatusOr<drav1beta1::NodePrepareResourcesResponse> response =
      Unary<drav1beta1::NodePrepareResourcesResponse>(
          timeout, [&](grpc::ClientContext* context,
                       drav1beta1::NodePrepareResourcesResponse* response) {
            return v1beta1_->NodePrepareResources(context, beta_request,
                                                  response);
          });
  if (!response.ok()) return response.status();
  return Convert<drav1::NodePrepareResourcesResponse>(*response);
}

absl::StatusOr<drav1::NodeUnprepareResourcesResponse> DraClient::Unprepare(
    DraApi api, const std::vector<ClaimRef>& claims, absl::Duration timeout) {
  const auto request =
      MakeRequest<drav1::NodeUnprepareResourcesRequest>(claims);
  if (api == DraApi::kV1) {
    return Unary<drav1::NodeUnprepareResourcesResponse>(
        timeout, [&](grpc::ClientContext* context,
                     drav1::NodeUnprepareResourcesResponse* response) {
          return v1_->NodeUnprepareResources(context, request, response);
        });
  }
  const auto beta_request =
      Convert<drav1beta1::NodeUnprepareResourcesRequest>(request);
  absl::StatusOr<drav1beta1::NodeUnprepareResourcesResponse> response =
      Unary<drav1beta1::NodeUnprepareResourcesResponse>(
          timeout, [&](grpc::ClientContext* context,
                       drav1beta1::NodeUnprepareResourcesResponse* response) {
            return v1beta1_->NodeUnprepareResources(context, beta_request,
                                                    response);
          });
  if (!response.ok()) return response.status();
  return Convert<drav1::NodeUnprepareResourcesResponse>(*response);
}

absl::Status DraClient::WatchHealth(
    absl::FunctionRef<void(const v1alpha1::NodeWatchResourcesResponse&)>
        on_message,
    absl::Time deadline) {
  grpc::ClientContext context;
  if (deadline != absl::InfiniteFuture()) {
    context.set_deadline(absl::ToChronoTime(deadline));
  }
  if (!Track(&context)) return absl::CancelledError("connection closed");
  std::unique_ptr<grpc::ClientReader<v1alpha1::NodeWatchResourcesResponse>>
      reader = health_->NodeWatchResources(
          &context, v1alpha1::NodeWatchResourcesRequest());
  v1alpha1::NodeWatchResourcesResponse message;
  while (reader->Read(&message)) on_message(message);
  grpc::Status status = reader->Finish();
  Untrack(&context);
  return FromGrpc(status);
}

}  // namespace gdp::dpctl
