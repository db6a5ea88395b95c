#include "dial.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

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

std::shared_ptr<grpc::Channel> OpenChannel(const std::string& target) {
  grpc::ChannelArguments args;
  // Channels to one target would otherwise share a connection and its
  // reconnect backoff, so a plugin that restarted on the same path could be
  // seen late.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
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

SocketClient::SocketClient(const std::string& socket_path)
    : target_(UnixTarget(socket_path)), channel_(OpenChannel(target_)) {}

absl::Status SocketClient::Connect(absl::Duration timeout, bool fail_fast) {
  if (fail_fast && absl::StartsWith(target_, "unix:")) {
    const std::string path = target_.substr(absl::string_view("unix:").size());
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ", target_, ": no such socket"));
    }
  }
  const absl::Time deadline = absl::Now() + timeout;
  grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (fail_fast && state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ", target_));
    }
    if (cancelled()) {
      return absl::CancelledError(
          absl::StrCat("gave up connecting to ", target_));
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "cannot connect to ", target_, " within ",
          absl::FormatDuration(timeout), " (channel ", StateName(state), ")"));
    }
    channel_->WaitForStateChange(
        state, absl::ToChronoTime(std::min(deadline, now + kPollInterval)));
    state = channel_->GetState(/*try_to_connect=*/true);
  }
  return absl::OkStatus();
}

bool SocketClient::Track(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  active_.insert(context);
  return true;
}

void SocketClient::Untrack(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  active_.erase(context);
}

void SocketClient::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  // Contexts are untracked under mu_ before they are destroyed, so each one
  // here is alive.
  for (grpc::ClientContext* context : active_) context->TryCancel();
}

bool SocketClient::cancelled() {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

}  // namespace gdp::dpctl
