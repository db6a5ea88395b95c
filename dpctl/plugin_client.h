// A client of one device plugin's DevicePlugin service on a unix socket,
// and of our DeviceStatus service where the plugin serves it too.
#ifndef GDP_DPCTL_PLUGIN_CLIENT_H_
#define GDP_DPCTL_PLUGIN_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "call_tracker.h"
#include "device_plugin_api.h"
#include "dial.h"
#include "grpcpp/grpcpp.h"
#include "status/v1/status.grpc.pb.h"
#include "v1beta1/api.grpc.pb.h"
#include "v1beta1/api.pb.h"

namespace gdp::dpctl {

// Thread-safe: calls may run concurrently from several threads.
class PluginClient : public DevicePluginApi {
 public:
  struct DialOptions {
    // How long Dial waits for the connection.
    absl::Duration connect_timeout = absl::Seconds(10);
    // Deadline of each unary call.
    absl::Duration rpc_timeout = absl::Seconds(10);
    // Fail at the first failed connection attempt (and at once when the
    // socket file is missing) instead of retrying until connect_timeout.
    bool fail_fast = false;
    // Polled every 100 ms while waiting; Dial gives up when it returns true.
    std::function<bool()> cancelled;
  };

  // Connects to the plugin serving `socket_path` (a path, or a "unix:"
  // target), blocking until the connection is up. Fails with UNAVAILABLE
  // (fail_fast), DEADLINE_EXCEEDED after connect_timeout, or CANCELLED; the
  // message names the target.
  static absl::StatusOr<std::shared_ptr<PluginClient>> Dial(
      const std::string& socket_path, const DialOptions& options);

  absl::StatusOr<v1beta1::DevicePluginOptions> GetDevicePluginOptions();

  // Runs ListAndWatch, calling `on_message` for each message until the
  // stream ends, `on_message` returns false, `deadline` passes or Cancel is
  // called. Returns the stream's final status: OK when the plugin ended it,
  // CANCELLED when stopped by `on_message` or Cancel, DEADLINE_EXCEEDED at
  // `deadline`. Blocks the calling thread for the whole stream.
  absl::Status ListAndWatch(
      absl::FunctionRef<bool(const v1beta1::ListAndWatchResponse&)> on_message,
      absl::Time deadline = absl::InfiniteFuture());

  absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const v1beta1::PreferredAllocationRequest& request) override;
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(
      const v1beta1::AllocateRequest& request) override;
  absl::Status PreStartContainer(
      const v1beta1::PreStartContainerRequest& request) override;
  void Cancel() override;

  // DeviceStatus.List (proto/status/v1): health, reason and physical unit of
  // each device. Fails with UNIMPLEMENTED when the plugin serves only the
  // kubelet's API.
  absl::StatusOr<status::v1::ListResponse> ListStatus();

  const std::string& target() const { return target_; }

 private:
  PluginClient(std::string target, std::shared_ptr<grpc::Channel> channel,
               absl::Duration rpc_timeout);

  // Runs one unary call with the deadline rpc_timeout, tracked for Cancel.
  template <typename Response, typename Call>
  absl::StatusOr<Response> Unary(Call call);

  const std::string target_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  const std::unique_ptr<status::v1::DeviceStatus::Stub> status_stub_;
  const absl::Duration rpc_timeout_;
  CallTracker calls_;
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_PLUGIN_CLIENT_H_
