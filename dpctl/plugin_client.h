// A client of one device plugin's DevicePlugin service on a unix socket,
// and of our DeviceStatus service where the plugin serves it too.
#ifndef GDP_DPCTL_PLUGIN_CLIENT_H_
#define GDP_DPCTL_PLUGIN_CLIENT_H_

#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "device_plugin_api.h"
#include "dial.h"
#include "status/v1/status.grpc.pb.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp::dpctl {

// Thread-safe: calls may run concurrently from several threads.
class PluginClient : public SocketClient, public DevicePluginApi {
 public:
  // A client of the plugin serving `socket_path` (a path, or a "unix:"
  // target) whose unary calls have the deadline `rpc_timeout`. Connects
  // lazily (SocketClient::Connect waits for it).
  PluginClient(const std::string& socket_path, absl::Duration rpc_timeout);

  absl::StatusOr<v1beta1::DevicePluginOptions> GetDevicePluginOptions();

  // Runs ListAndWatch as SocketClient::ReadStream runs a stream.
  absl::Status ListAndWatch(
      absl::FunctionRef<bool(const v1beta1::ListAndWatchResponse&)> on_message,
      absl::Time deadline = absl::InfiniteFuture());

  absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const v1beta1::PreferredAllocationRequest& request) override;
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(
      const v1beta1::AllocateRequest& request) override;
  absl::Status PreStartContainer(
      const v1beta1::PreStartContainerRequest& request) override;
  void Cancel() override { SocketClient::Cancel(); }

  // DeviceStatus.List (proto/status/v1): health, reason and physical unit of
  // each device. Fails with UNIMPLEMENTED when the plugin serves only the
  // kubelet's API.
  absl::StatusOr<status::v1::ListResponse> ListStatus();

 private:
  // Runs one unary call with the deadline rpc_timeout.
  template <typename Response, typename Call>
  absl::StatusOr<Response> Unary(Call call) {
    return SocketClient::Unary<Response>(rpc_timeout_, call);
  }

  const std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  const std::unique_ptr<status::v1::DeviceStatus::Stub> status_stub_;
  const absl::Duration rpc_timeout_;
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_PLUGIN_CLIENT_H_
