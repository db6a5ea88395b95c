#include "plugin_client.h"

namespace gdp::dpctl {

PluginClient::PluginClient(const std::string& socket_path,
                           absl::Duration rpc_timeout)
    : SocketClient(socket_path),
      stub_(v1beta1::DevicePlugin::NewStub(channel_)),
      status_stub_(status::v1::DeviceStatus::NewStub(channel_)),
      rpc_timeout_(rpc_timeout) {}

absl::StatusOr<v1beta1::DevicePluginOptions>
PluginClient::GetDevicePluginOptions() {
  return Unary<v1beta1::DevicePluginOptions>(
      [this](grpc::ClientContext* context,
             v1beta1::DevicePluginOptions* response) {
        return stub_->GetDevicePluginOptions(context, v1beta1::Empty(),
                                             response);
      });
}

absl::StatusOr<v1beta1::PreferredAllocationResponse>
PluginClient::GetPreferredAllocation(
    const v1beta1::PreferredAllocationRequest& request) {
  return Unary<v1beta1::PreferredAllocationResponse>(
      [&](grpc::ClientContext* context,
          v1beta1::PreferredAllocationResponse* response) {
        return stub_->GetPreferredAllocation(context, request, response);
      });
}

absl::StatusOr<v1beta1::AllocateResponse> PluginClient::Allocate(
    const v1beta1::AllocateRequest& request) {
  return Unary<v1beta1::AllocateResponse>(
      [&](grpc::ClientContext* context, v1beta1::AllocateResponse* response) {
        return stub_->Allocate(context, request, response);
      });
}

absl::Status PluginClient::PreStartContainer(
    const v1beta1::PreStartContainerRequest& request) {
  return Unary<v1beta1::PreStartContainerResponse>(
             [&](grpc::ClientContext* context,
                 v1beta1::PreStartContainerResponse* response) {
               return stub_->PreStartContainer(context, request, response);
             })
      .status();
}

absl::StatusOr<status::v1::ListResponse> PluginClient::ListStatus() {
  return Unary<status::v1::ListResponse>(
      [this](grpc::ClientContext* context, status::v1::ListResponse* response) {
        return status_stub_->List(context, status::v1::ListRequest(), response);
      });
}

absl::Status PluginClient::ListAndWatch(
    absl::FunctionRef<bool(const v1beta1::ListAndWatchResponse&)> on_message,
    absl::Time deadline) {
  return ReadStream<v1beta1::ListAndWatchResponse>(
      deadline,
      [this](grpc::ClientContext* context) {
        return stub_->ListAndWatch(context, v1beta1::Empty());
      },
      on_message);
}

}  // namespace gdp::dpctl
