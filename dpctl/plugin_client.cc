#include "plugin_client.h"

#include <utility>

namespace gdp::dpctl {

absl::StatusOr<std::shared_ptr<PluginClient>> PluginClient::Dial(
    const std::string& socket_path, const DialOptions& options) {
  const std::string target = UnixTarget(socket_path);
  std::shared_ptr<grpc::Channel> channel = OpenChannel(target);
  ConnectWait wait;
  wait.timeout = options.connect_timeout;
  wait.fail_fast = options.fail_fast;
  wait.cancelled = options.cancelled;
  wait.name_state = true;
  if (absl::Status s = AwaitConnected(*channel, target, wait); !s.ok()) {
    return s;
  }
  return std::shared_ptr<PluginClient>(
      new PluginClient(target, std::move(channel), options.rpc_timeout));
}

PluginClient::PluginClient(std::string target,
                           std::shared_ptr<grpc::Channel> channel,
                           absl::Duration rpc_timeout)
    : target_(std::move(target)),
      channel_(std::move(channel)),
      stub_(v1beta1::DevicePlugin::NewStub(channel_)),
      status_stub_(status::v1::DeviceStatus::NewStub(channel_)),
      rpc_timeout_(rpc_timeout) {}

void PluginClient::Cancel() { calls_.Cancel(); }

template <typename Response, typename Call>
absl::StatusOr<Response> PluginClient::Unary(Call call) {
  return calls_.Unary<Response>(rpc_timeout_, "plugin connection closed", call);
}

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
  grpc::ClientContext context;
  if (!calls_.TrackStream(&context, deadline)) {
    return absl::CancelledError("plugin connection closed");
  }
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader =
      stub_->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse message;
  bool stopped = false;
  while (reader->Read(&message)) {
    if (!on_message(message)) {
      stopped = true;
      context.TryCancel();
      while (reader->Read(&message)) {
      }
      break;
    }
  }
  grpc::Status status = reader->Finish();
  calls_.Untrack(&context);
  if (stopped) return absl::CancelledError("stopped by the reader");
  return FromGrpc(status);
}

}  // namespace gdp::dpctl
