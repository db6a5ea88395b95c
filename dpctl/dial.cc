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

absl::Status AwaitConnected(grpc::Channel& channel, const std::string& target,
                            const ConnectWait& wait) {
  if (wait.fail_fast && absl::StartsWith(target, "unix:")) {
    const std::string path = target.substr(absl::string_view("unix:").size());
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ", target, ": no such socket"));
    }
  }
  const absl::Time deadline = absl::Now() + wait.timeout;
  grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (wait.fail_fast && state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
      return absl::UnavailableError(absl::StrCat("cannot connect to ", target));
    }
    if (wait.cancelled && wait.cancelled()) {
      return absl::CancelledError(
          absl::StrCat("gave up connecting to ", target));
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "cannot connect to ", target, " within ",
          absl::FormatDuration(wait.timeout),
          wait.name_state ? absl::StrCat(" (channel ", StateName(state), ")")
                          : ""));
    }
    channel.WaitForStateChange(
        state, absl::ToChronoTime(std::min(deadline, now + kPollInterval)));
    state = channel.GetState(/*try_to_connect=*/true);
  }
  return absl::OkStatus();
}

}  // namespace gdp::dpctl
