// `dpctl list`, `dpctl status`, `dpctl allocate` and `dpctl preferred`:
// one-shot calls to a device plugin's socket, printing the answers.
#ifndef GDP_DPCTL_CLIENT_H_
#define GDP_DPCTL_CLIENT_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "event_printer.h"

namespace gdp::dpctl {

// Exit codes of the client commands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcError = 2;
inline constexpr int kExitConnectError = 3;
inline constexpr int kExitUsage = 64;

struct ClientConfig {
  // The plugin's socket: a path, or a "unix:" target.
  std::string socket;
  OutputFormat format = OutputFormat::kText;
  // For connecting and for each call.
  absl::Duration timeout = absl::Seconds(10);
};

// Errors: an RPC that fails prints "error: <CODE>: <message>" to `err`
// (text) or {"error":{"code":..,"message":..}} to `out` (JSON) and returns
// kExitRpcError; failing to connect prints the same way with code
// UNAVAILABLE (or DEADLINE_EXCEEDED) and returns kExitConnectError.

// Prints an error as the client commands do: in text form
// "error: <code>: <message>" (just "error: <code>" when `message` is empty)
// to `err`, in JSON form {"error":{"code":..,"message":..}} to `out`.
void PrintClientError(OutputFormat format, absl::string_view code,
                      absl::string_view message, std::ostream& out,
                      std::ostream& err);
// Likewise with the name of the code of `status` and its message.
void PrintClientError(OutputFormat format, const absl::Status& status,
                      std::ostream& out, std::ostream& err);

// Prints the plugin's options event and its first ListAndWatch message as a
// devices event. With `watch`, prints every message until the stream ends
// (then a stream_closed event with error "EOF", exit 0) or `watch_for`
// passes (exit 0); a stream ending with an error exits kExitRpcError.
// After each message it asks the plugin's DeviceStatus service and gives
// every device its reason (DevicesEvent); a plugin that does not serve it
// (UNIMPLEMENTED) is listed without reasons, and any other failure of it
// prints a warning to `err` and lists without reasons from then on.
int RunList(const ClientConfig& config, bool watch,
            std::optional<absl::Duration> watch_for, std::ostream& out,
            std::ostream& err);

// Prints the plugin's DeviceStatus.List answer as a status event (health,
// reason and physical unit of each device). A plugin that does not serve
// DeviceStatus fails with UNIMPLEMENTED (kExitRpcError).
int RunStatus(const ClientConfig& config, std::ostream& out, std::ostream& err);

// Sends one Allocate with one container request per element of
// `containers` and prints the response: JSON
// {"container_responses":[<ContainerResponseJson>...]}, or text lines
// "container <i>: <ContainerResponseText>". With `repeat` > 1 it sends the
// same request `repeat` times on one connection (each answer must succeed),
// prints the last answer, then the round trips: JSON {"calls":N,"p50_us":..,
// "p99_us":..,"max_us":..}, or a text line "N calls: p50 .. us, ...".
int RunAllocate(const ClientConfig& config,
                const std::vector<std::vector<std::string>>& containers,
                int repeat, std::ostream& out, std::ostream& err);

// Sends one GetPreferredAllocation with one container request and prints
// the answer: JSON {"container_responses":[{"devices":[...]}...]}, or text
// lines "container <i>: <id>, <id>".
int RunPreferred(const ClientConfig& config,
                 const std::vector<std::string>& available,
                 const std::vector<std::string>& must_include, int size,
                 std::ostream& out, std::ostream& err);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_CLIENT_H_
