#include "dra_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gdp::dpctl {
namespace {

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

DraClient::DraClient(const std::string& socket_path)
    : SocketClient(socket_path),
      registration_(pluginregistration::Registration::NewStub(channel_)),
      v1_(drav1::DRAPlugin::NewStub(channel_)),
      v1beta1_(drav1beta1::DRAPlugin::NewStub(channel_)),
      health_(v1alpha1::DRAResourceHealth::NewStub(channel_)) {}

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

template <typename Request, typename Response, typename BetaRequest,
          typename BetaResponse>
absl::StatusOr<Response> DraClient::PluginCall(
    DraApi api, const Request& request, absl::Duration timeout,
    grpc::Status (drav1::DRAPlugin::Stub::*v1)(grpc::ClientContext*,
                                               const Request&, Response*),
    grpc::Status (drav1beta1::DRAPlugin::Stub::*v1beta1)(grpc::ClientContext*,
                                                         const BetaRequest&,
                                                         BetaResponse*)) {
  if (api == DraApi::kV1) {
    return Unary<Response>(
        timeout, [&](grpc::ClientContext* context, Response* response) {
          return (v1_.get()->*v1)(context, request, response);
        });
  }
  const auto beta_request = ConvertDraMessage<BetaRequest>(request);
  absl::StatusOr<BetaResponse> response = Unary<BetaResponse>(
      timeout, [&](grpc::ClientContext* context, BetaResponse* response) {
        return (v1beta1_.get()->*v1beta1)(context, beta_request, response);
      });
  if (!response.ok()) return response.status();
  return ConvertDraMessage<Response>(*response);
}

absl::StatusOr<drav1::NodePrepareResourcesResponse> DraClient::Prepare(
    DraApi api, const std::vector<ClaimRef>& claims, absl::Duration timeout) {
  return PluginCall(api,
                    MakeRequest<drav1::NodePrepareResourcesRequest>(claims),
                    timeout, &drav1::DRAPlugin::Stub::NodePrepareResources,
                    &drav1beta1::DRAPlugin::Stub::NodePrepareResources);
}

absl::StatusOr<drav1::NodeUnprepareResourcesResponse> DraClient::Unprepare(
    DraApi api, const std::vector<ClaimRef>& claims, absl::Duration timeout) {
  return PluginCall(api,
                    MakeRequest<drav1::NodeUnprepareResourcesRequest>(claims),
                    timeout, &drav1::DRAPlugin::Stub::NodeUnprepareResources,
                    &drav1beta1::DRAPlugin::Stub::NodeUnprepareResources);
}

absl::Status DraClient::WatchHealth(
    absl::FunctionRef<void(const v1alpha1::NodeWatchResourcesResponse&)>
        on_message,
    absl::Time deadline) {
  return ReadStream<v1alpha1::NodeWatchResourcesResponse>(
      deadline,
      [this](grpc::ClientContext* context) {
        return health_->NodeWatchResources(
            context, v1alpha1::NodeWatchResourcesRequest());
      },
      [&](const v1alpha1::NodeWatchResourcesResponse& message) {
        on_message(message);
        return true;
      });
}

}  // namespace gdp::dpctl
