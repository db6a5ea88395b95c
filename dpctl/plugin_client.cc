#include "plugin_client.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gdp::dpctl {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(100);

std::string StateName(grpc_connectivity_state state) {
  switch (state) {
    case GRPC_CHANNEL_IDLE:
      return "IDLE";
    case GRPC_CHANNEL_CONNECTING:
      return "CONNECTING";
    case GRPC_CHANNEL_READY:
      return "READY";
    case GRPC_CHANNEL_TRANSIENT_FAILURE:
      return "TRANSIENT_FAILURE";
    case GRPC_CHANNEL_SHUTDOWN:
      return "SHUTDOWN";
  }
  return "UNKNOWN";
}

}  // namespace

std::string UnixTarget(const std::string& socket_path) {
  if (absl::StartsWith(socket_path, "unix:") ||
      absl::StartsWith(socket_path, "unix-abstract:")) {
    return socket_path;
  }
  std::error_code error;
  std::filesystem::path absolute =
      std::filesystem::absolute(socket_path, error);
  return absl::StrCat("unix:", error ? socket_path : absolute.string());
}

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::StatusOr<std::shared_ptr<PluginClient>> PluginClient::Dial(
    const std::string& socket_path, const DialOptions& options) {
  const std::string target = UnixTarget(socket_path);
  if (options.fail_fast && absl::StartsWith(target, "unix:")) {
    std::string path = target.substr(absl::string_view("unix:").size());
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ", target, ": no such socket"));
    }
  }
  grpc::ChannelArguments args;
  // Channels to one target would otherwise share a connection and its
  // reconnect backoff, so a plugin that restarted on the same path could be
  // seen late.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args);

  const absl::Time deadline = absl::Now() + options.connect_timeout;
  grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (options.fail_fast && state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      return absl::UnavailableError(absl::StrCat("cannot connect to ", target));
    }
    if (options.cancelled && options.cancelled()) {
      return absl::CancelledError(
          absl::StrCat("gave up connecting to ", target));
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("cannot connect to ", target, " within ",
                       absl::FormatDuration(options.connect_timeout),
                       " (channel ", StateName(state), ")"));
    }
    channel->WaitForStateChange(
        state, absl::ToChronoTime(std::min(deadline, now + kPollInterval)));
    state = channel->GetState(/*try_to_connect=*/true);
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

bool PluginClient::Track(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  active_.insert(context);
  return true;
}

void PluginClient::Untrack(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  active_.erase(context);
}

void PluginClient::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  // Contexts are untracked under mu_ before they are destroyed, so each one
  // here is alive.
  for (grpc::ClientContext* context : active_) context->TryCancel();
}

template <typename Response, typename Call>
absl::StatusOr<Response> PluginClient::Unary(Call call) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + rpc_timeout_));
  if (!Track(&context)) {
    return absl::CancelledError("plugin connection closed");
  }
  Response response;
  grpc::Status status = call(&context, &response);
  Untrack(&context);
  if (!status.ok()) return FromGrpc(status);
  return response;
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
  if (deadline != absl::InfiniteFuture()) {
    context.set_deadline(absl::ToChronoTime(deadline));
  }
  if (!Track(&context)) {
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
  Untrack(&context);
  if (stopped) return absl::CancelledError("stopped by the reader");
  return FromGrpc(status);
}

}  // namespace gdp::dpctl
