// A client of a DRA kubelet plugin's sockets: its registration socket
// (pluginregistration.Registration) and its endpoint (DRAPlugin v1 or
// v1beta1, and v1alpha1.DRAResourceHealth).
#ifndef GDP_DPCTL_DRA_CLIENT_H_
#define GDP_DPCTL_DRA_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "dial.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "drahealth/v1alpha1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace gdp::dpctl {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

// The DRAPlugin API version a call uses.
enum class DraApi { kV1, kV1beta1 };

// "v1" or "v1beta1".
std::string ApiName(DraApi api);
// The service name a plugin lists in supported_versions: "v1.DRAPlugin" or
// "v1beta1.DRAPlugin".
std::string ApiService(DraApi api);
// Parses "v1" or "v1beta1"; InvalidArgument otherwise.
absl::StatusOr<DraApi> ParseApi(absl::string_view name);

// One ResourceClaim as the kubelet names it to a plugin.
struct ClaimRef {
  std::string ns;
  std::string name;
  std::string uid;
};

// Parses "NS/NAME/UID" (three non-empty parts). InvalidArgument naming the
// input otherwise.
absl::StatusOr<ClaimRef> ParseClaimRef(absl::string_view spec);

// "NS/NAME/UID".
std::string ClaimRefText(const ClaimRef& claim);

// Converts between the v1 and v1beta1 forms of a DRAPlugin message through
// the wire format, which the two versions share. Fields only `To` knows
// stay unset; fields only `From` knows are kept as unknown fields.
template <typename To, typename From>
To ConvertDraMessage(const From& from) {
  To to;
  to.ParseFromString(from.SerializeAsString());
  return to;
}

// Thread-safe: calls may run concurrently from several threads.
class DraClient : public SocketClient {
 public:
  // A client for the socket at `socket_path` (a path, or a "unix:" target).
  // Connects lazily: the first call, or Connect, opens the connection.
  explicit DraClient(const std::string& socket_path);

  // Registration.GetInfo with the given deadline.
  absl::StatusOr<pluginregistration::PluginInfo> GetInfo(
      absl::Duration timeout);
  // Registration.NotifyRegistrationStatus with the given deadline.
  absl::Status NotifyRegistrationStatus(bool registered,
                                        const std::string& error,
                                        absl::Duration timeout);

  // DRAPlugin.NodePrepareResources on `api` with one Claim per element of
  // `claims`. The v1beta1 answer is returned as v1 (the wire format is the
  // same, v1 only adds Device.share_id). Fails with the call's status.
  absl::StatusOr<drav1::NodePrepareResourcesResponse> Prepare(
      DraApi api, const std::vector<ClaimRef>& claims, absl::Duration timeout);
  // DRAPlugin.NodeUnprepareResources, likewise.
  absl::StatusOr<drav1::NodeUnprepareResourcesResponse> Unprepare(
      DraApi api, const std::vector<ClaimRef>& claims, absl::Duration timeout);

  // Runs v1alpha1.DRAResourceHealth/NodeWatchResources as
  // SocketClient::ReadStream runs a stream.
  absl::Status WatchHealth(
      absl::FunctionRef<void(const v1alpha1::NodeWatchResourcesResponse&)>
          on_message,
      absl::Time deadline = absl::InfiniteFuture());

 private:
  // Runs one DRAPlugin call on `api`: `v1` with `request`, or `v1beta1`
  // with its v1beta1 form, whose answer is returned in the v1 form.
  template <typename Request, typename Response, typename BetaRequest,
            typename BetaResponse>
  absl::StatusOr<Response> PluginCall(
      DraApi api, const Request& request, absl::Duration timeout,
      grpc::Status (drav1::DRAPlugin::Stub::*v1)(grpc::ClientContext*,
                                                 const Request&, Response*),
      grpc::Status (drav1beta1::DRAPlugin::Stub::*v1beta1)(grpc::ClientContext*,
                                                           const BetaRequest&,
                                                           BetaResponse*));

  const std::unique_ptr<pluginregistration::Registration::Stub> registration_;
  const std::unique_ptr<drav1::DRAPlugin::Stub> v1_;
  const std::unique_ptr<drav1beta1::DRAPlugin::Stub> v1beta1_;
  const std::unique_ptr<v1alpha1::DRAResourceHealth::Stub> health_;
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DRA_CLIENT_H_
