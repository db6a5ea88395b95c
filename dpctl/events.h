// The events dpctl reports, as JSON objects with fixed field names. The JSON
// form is canonical: `dpctl kubelet --json` prints these objects one per line
// and the text form is rendered from them (event_printer.h).
#ifndef GDP_DPCTL_EVENTS_H_
#define GDP_DPCTL_EVENTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "json_fields.h"
#include "status/v1/status.pb.h"
#include "v1beta1/api.pb.h"

namespace gdp::dpctl {

// Receives events. Implementations must be thread-safe: Emit is called from
// gRPC handler threads, stream follower threads and command threads, and
// may be called while the caller holds its own locks, so Emit must not call
// back into dpctl components.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Emit(const Json& event) = 0;
};

// Health value of a device that is usable, as in the v1beta1 API.
inline constexpr absl::string_view kHealthy = "Healthy";
inline constexpr absl::string_view kUnhealthy = "Unhealthy";

// "<CODE>: <message>", or "<CODE>" when the message is empty (CODE as
// absl::StatusCodeToString names it: "OK", "INVALID_ARGUMENT", ...).
std::string StatusText(const absl::Status& status);

// {"envs":{..},"mounts":[..],"devices":[..],"annotations":{..},
//  "cdi_devices":[..]}.
Json ContainerResponseJson(const v1beta1::ContainerAllocateResponse& response);

// Event constructors. `resource` is left out of the object when empty (the
// client commands do not know the resource name of a socket).
Json ListeningEvent(absl::string_view socket);
// "ok":true, or "ok":false with "error": the status message.
Json RegisterEvent(const v1beta1::RegisterRequest& request,
                   const absl::Status& result);
Json OptionsEvent(absl::string_view resource,
                  const v1beta1::DevicePluginOptions& options);
// "devices": [{"id","health","numa":[n,...]}...], "total", "healthy".
// With `status` (the plugin's DeviceStatus.List answer), every device gets
// a "reason" after "health": the status's reason for the device with the
// same ID and the same health, or "" (healthy, unknown to the status, or
// its health changed between the two calls).
Json DevicesEvent(absl::string_view resource,
                  const std::vector<v1beta1::Device>& devices,
                  const status::v1::ListResponse* status = nullptr);
// The whole DeviceStatus.List answer: "resource" (when the plugin names
// it), "devices": [{"id","health","reason","numa_node","visible_id",
// "gpu_index","gpu_uuid","mig_gi","mig_ci","replica"}...] (numa_node,
// mig_gi, mig_ci and replica only when set), "total", "healthy".
Json StatusEvent(const status::v1::ListResponse& status);
// `error` is StatusText of the stream's final status, or "EOF" when the
// plugin ended the stream with OK.
Json StreamClosedEvent(absl::string_view resource, const absl::Status& status);
// "devices": the plugin's answer, or "error": {"code","message"} on failure.
Json PreferredEvent(absl::string_view resource, absl::string_view pod,
                    const std::vector<std::string>& available, int size,
                    const absl::StatusOr<std::vector<std::string>>& answer);
// "response": ContainerResponseJson, or "error": {"code","message"} on
// failure.
Json AllocateEvent(
    absl::string_view resource, absl::string_view pod,
    const std::vector<std::string>& devices,
    const absl::StatusOr<v1beta1::ContainerAllocateResponse>& response);
Json AllocateFailedEvent(absl::string_view resource, absl::string_view pod,
                         absl::string_view error);
// "ok":true, or "ok":false with "error": {"code","message"}.
Json PreStartEvent(absl::string_view resource, absl::string_view pod,
                   const std::vector<std::string>& devices,
                   const absl::Status& result);
Json FreedEvent(absl::string_view pod, absl::string_view resource,
                const std::vector<std::string>& devices);
// A stdin command that could not be run.
Json CommandErrorEvent(absl::string_view command, absl::string_view error);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_EVENTS_H_
