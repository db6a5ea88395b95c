#include "dra_calls.h"

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "dra_events.h"

namespace gdp::dpctl {

Json PrepareCall(DraClient& client, absl::string_view driver, DraApi api,
                 const std::vector<ClaimRef>& claims, absl::Duration timeout) {
  const absl::Time start = absl::Now();
  absl::StatusOr<drav1::NodePrepareResourcesResponse> response =
      client.Prepare(api, claims, timeout);
  const absl::Duration elapsed = absl::Now() - start;
  if (!response.ok()) {
    return CallFailedEvent("prepare", driver, api, response.status(), elapsed);
  }
  return PrepareEvent(driver, api, claims, *response, elapsed);
}

Json UnprepareCall(DraClient& client, absl::string_view driver, DraApi api,
                   const std::vector<ClaimRef>& claims,
                   absl::Duration timeout) {
  const absl::Time start = absl::Now();
  absl::StatusOr<drav1::NodeUnprepareResourcesResponse> response =
      client.Unprepare(api, claims, timeout);
  const absl::Duration elapsed = absl::Now() - start;
  if (!response.ok()) {
    return CallFailedEvent("unprepare", driver, api, response.status(),
                           elapsed);
  }
  return UnprepareEvent(driver, api, claims, *response, elapsed);
}

bool CallFailed(const Json& event) {
  return absl::EndsWith(event.value("event", std::string()), "_failed");
}

}  // namespace gdp::dpctl
