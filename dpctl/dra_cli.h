// `dpctl dra info|prepare|unprepare|health`: one-shot calls straight to a
// DRA plugin's sockets (no plugin watcher), printing the answers.
#ifndef GDP_DPCTL_DRA_CLI_H_
#define GDP_DPCTL_DRA_CLI_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client.h"
#include "dra_client.h"
#include "event_printer.h"

namespace gdp::dpctl {

// Exit code of prepare and unprepare when the call succeeded but a claim
// has an error or is missing from the answer. The other exit codes are
// the client commands' (client.h): kExitOk, kExitRpcError,
// kExitConnectError.
inline constexpr int kExitClaimError = 1;

struct DraClientConfig {
  // The socket: a path, or a "unix:" target.
  std::string socket;
  OutputFormat format = OutputFormat::kText;
  DraApi api = DraApi::kV1;
  // For connecting and for the call. Default: 10 s for info, 45 s (the
  // kubelet's) for prepare and unprepare; for health, how long to watch
  // (default: until the stream ends).
  std::optional<absl::Duration> timeout;
};

// Errors are printed, and exit, as the client commands' do (client.h).

// Calls GetInfo on a registration socket and prints an info event: the
// plugin's answer and what a kubelet knowing v1 and v1beta1 would do with
// it (the API it would use, or why it would refuse the plugin). Does not
// call NotifyRegistrationStatus.
int RunDraInfo(const DraClientConfig& config, std::ostream& out,
               std::ostream& err);

// One NodePrepareResources call with `claims` on config.api; prints the
// prepare event. kExitClaimError when a claim has an error or is missing.
int RunDraPrepare(const DraClientConfig& config,
                  const std::vector<ClaimRef>& claims, std::ostream& out,
                  std::ostream& err);

// Likewise with NodeUnprepareResources and the unprepare event.
int RunDraUnprepare(const DraClientConfig& config,
                    const std::vector<ClaimRef>& claims, std::ostream& out,
                    std::ostream& err);

// Prints every NodeWatchResources message as a health event until the
// stream ends (a health_stream_ended event with error "EOF", exit 0) or
// config.timeout passes (exit 0); a stream ending with an error exits
// kExitRpcError.
int RunDraHealth(const DraClientConfig& config, std::ostream& out,
                 std::ostream& err);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DRA_CLI_H_
