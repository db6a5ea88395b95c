#include "dra_cli.h"

#include <algorithm>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "dra_calls.h"
#include "dra_events.h"
#include "dra_registration.h"
#include "event_printer.h"

namespace gdp::dpctl {
namespace {

constexpr absl::Duration kDefaultInfoTimeout = absl::Seconds(10);
// For connecting when the call's timeout is longer.
constexpr absl::Duration kConnectTimeout = absl::Seconds(10);

// A client connected to config.socket within `timeout`, or null after
// printing why not.
std::shared_ptr<DraClient> Connect(const DraClientConfig& config,
                                   absl::Duration timeout, std::ostream& out,
                                   std::ostream& err) {
  auto client = std::make_shared<DraClient>(config.socket);
  if (absl::Status s = client->Connect(timeout, /*fail_fast=*/true); !s.ok()) {
    PrintClientError(config.format, s, out, err);
    return nullptr;
  }
  return client;
}

// Prints the event of a prepare or unprepare call, or its failure as an
// error, and returns the exit code.
int PrintCall(const DraClientConfig& config, const Json& event,
              std::ostream& out, std::ostream& err) {
  if (CallFailed(event)) {
    PrintClientError(config.format, event.value("code", std::string()),
                     event.value("message", std::string()), out, err);
    return kExitRpcError;
  }
  EventPrinter(&out, config.format).Emit(event);
  return AllClaimsOk(event) ? kExitOk : kExitClaimError;
}

absl::Duration CallTimeout(const DraClientConfig& config) {
  return config.timeout.value_or(kDraCallTimeout);
}

// Connects as prepare and unprepare do, then runs `call` (PrepareCall or
// UnprepareCall) with `claims` and prints its event (PrintCall).
template <typename Call>
int RunClaimsCall(const DraClientConfig& config,
                  const std::vector<ClaimRef>& claims, Call call,
                  std::ostream& out, std::ostream& err) {
  std::shared_ptr<DraClient> client =
      Connect(config, std::min(CallTimeout(config), kConnectTimeout), out, err);
  if (client == nullptr) return kExitConnectError;
  return PrintCall(config,
                   call(*client, "", config.api, claims, CallTimeout(config)),
                   out, err);
}

}  // namespace

int RunDraInfo(const DraClientConfig& config, std::ostream& out,
               std::ostream& err) {
  const absl::Duration timeout = config.timeout.value_or(kDefaultInfoTimeout);
  std::shared_ptr<DraClient> client = Connect(config, timeout, out, err);
  if (client == nullptr) return kExitConnectError;
  absl::StatusOr<pluginregistration::PluginInfo> info =
      client->GetInfo(timeout);
  if (!info.ok()) {
    PrintClientError(config.format, info.status(), out, err);
    return kExitRpcError;
  }
  // The socket as the kubelet would name it: an absolute path.
  std::string socket(client->target());
  if (absl::StartsWith(socket, "unix:")) socket.erase(0, sizeof("unix:") - 1);
  EventPrinter(&out, config.format)
      .Emit(InfoEvent(socket, *info, ValidatePluginInfo(socket, *info, {})));
  return kExitOk;
}

int RunDraPrepare(const DraClientConfig& config,
                  const std::vector<ClaimRef>& claims, std::ostream& out,
                  std::ostream& err) {
  return RunClaimsCall(config, claims, &PrepareCall, out, err);
}

int RunDraUnprepare(const DraClientConfig& config,
                    const std::vector<ClaimRef>& claims, std::ostream& out,
                    std::ostream& err) {
  return RunClaimsCall(config, claims, &UnprepareCall, out, err);
}

int RunDraHealth(const DraClientConfig& config, std::ostream& out,
                 std::ostream& err) {
  std::shared_ptr<DraClient> client = Connect(
      config,
      std::min(config.timeout.value_or(kConnectTimeout), kConnectTimeout), out,
      err);
  if (client == nullptr) return kExitConnectError;
  EventPrinter printer(&out, config.format);
  const absl::Time deadline = config.timeout.has_value()
                                  ? absl::Now() + *config.timeout
                                  : absl::InfiniteFuture();
  absl::Status status = client->WatchHealth(
      [&](const v1alpha1::NodeWatchResourcesResponse& message) {
        printer.Emit(HealthEvent("", message));
      },
      deadline);
  if (status.ok()) {
    printer.Emit(HealthStreamEndedEvent("", status));
    return kExitOk;
  }
  if (config.timeout.has_value() && absl::IsDeadlineExceeded(status)) {
    return kExitOk;
  }
  PrintClientError(config.format, status, out, err);
  return kExitRpcError;
}

}  // namespace gdp::dpctl
