// The events of dpctl's DRA side (`dpctl dra-kubelet`, `dpctl dra`), as
// JSON objects with fixed field names, "event" first. The JSON form is
// canonical; the text form is rendered from it (event_printer.h).
#ifndef GDP_DPCTL_DRA_EVENTS_H_
#define GDP_DPCTL_DRA_EVENTS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "dra_client.h"
#include "events.h"

namespace gdp::dpctl {

// "Healthy", "Unhealthy" or "Unknown" (also for values this build does not
// know).
std::string HealthName(v1alpha1::HealthStatus health);

// What a registration attempt found out, for RegisteredEvent.
struct RegistrationReport {
  std::string socket;    // the registration socket
  std::string driver;    // PluginInfo.name
  std::string endpoint;  // PluginInfo.endpoint, or the socket when empty
  std::vector<std::string> versions;  // PluginInfo.supported_versions
  std::optional<DraApi> api;          // the API chosen, when one was
  bool health = false;                // the health stream will be followed
  std::string error;                  // empty: registered
};

// One registration as `list` shows it.
struct DriverReport {
  std::string driver;
  std::string endpoint;
  std::string socket;
  DraApi api = DraApi::kV1;
  bool health = false;
  bool in_use = false;  // the newest registration of its driver
};

// {"event":"listening","dir":..}: the watcher follows `dir`.
Json DraListeningEvent(absl::string_view dir);
// {"event":"plugin_found","socket":..}.
Json PluginFoundEvent(absl::string_view socket);
// {"event":"plugin_error","socket":..,"step":..,"error":..}, plus
// "retry_in_ms" when the step is retried after `retry_in`.
Json PluginErrorEvent(absl::string_view socket, absl::string_view step,
                      absl::string_view error,
                      std::optional<absl::Duration> retry_in = std::nullopt);
// {"event":"registered","socket","driver","endpoint","versions":[..],
//  "api":"v1"|"v1beta1"|"","health":bool,"ok":bool}, plus "error" when
// refused.
Json RegisteredEvent(const RegistrationReport& report);
// {"event":"deregistered","driver","endpoint","socket"}.
Json DeregisteredEvent(absl::string_view driver, absl::string_view endpoint,
                       absl::string_view socket);
// {"event":"health","driver":..,"devices":[{"pool","device","health",
//  "last_updated","timeout_seconds","message"}]}; "driver" is left out
// when empty.
Json HealthEvent(absl::string_view driver,
                 const v1alpha1::NodeWatchResourcesResponse& response);
// {"event":"health_stream_ended","driver","error"}: error is "EOF" when the
// plugin ended the stream with OK, else StatusText; plus "retry_in_ms" when
// the stream is re-opened after `retry_in`.
Json HealthStreamEndedEvent(
    absl::string_view driver, const absl::Status& status,
    std::optional<absl::Duration> retry_in = std::nullopt);
// {"event":"prepare","driver","api","claims":{uid:{"devices":[{"requests",
//  "pool","device","cdi_ids"[,"share_id"]}],"error"}},"missing":[uid..],
//  "elapsed_ms"}: the claims asked for in request order, then any other
// UID of the answer; "missing" lists the asked UIDs the answer lacks.
Json PrepareEvent(absl::string_view driver, DraApi api,
                  const std::vector<ClaimRef>& asked,
                  const drav1::NodePrepareResourcesResponse& response,
                  absl::Duration elapsed);
// Likewise with "claims":{uid:{"error"}}.
Json UnprepareEvent(absl::string_view driver, DraApi api,
                    const std::vector<ClaimRef>& asked,
                    const drav1::NodeUnprepareResourcesResponse& response,
                    absl::Duration elapsed);
// {"event":"<call>_failed","driver","api","code","message","elapsed_ms"}
// for `call` "prepare" or "unprepare".
Json CallFailedEvent(absl::string_view call, absl::string_view driver,
                     DraApi api, const absl::Status& status,
                     absl::Duration elapsed);
// {"event":"drivers","drivers":[{"driver","endpoint","socket","api",
//  "health","in_use"}]}.
Json DriversEvent(const std::vector<DriverReport>& drivers);
// {"event":"info","socket","type","name","endpoint","versions":[..]}, plus
// what a kubelet would do with it: "api" and "health" when `report` has
// no error, else "error".
Json InfoEvent(absl::string_view socket,
               const pluginregistration::PluginInfo& info,
               const RegistrationReport& report);

// True when no claim of the event (prepare or unprepare) has an error and
// none is missing.
bool AllClaimsOk(const Json& event);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DRA_EVENTS_H_
