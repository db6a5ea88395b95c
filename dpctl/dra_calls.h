// NodePrepareResources and NodeUnprepareResources as the kubelet makes
// them, each returning the event that reports it.
#ifndef GDP_DPCTL_DRA_CALLS_H_
#define GDP_DPCTL_DRA_CALLS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "dra_client.h"
#include "events.h"

namespace gdp::dpctl {

// The kubelet's deadline for each of the two calls.
inline constexpr absl::Duration kDraCallTimeout = absl::Seconds(45);

// One NodePrepareResources call with `claims` on `api`. Returns a prepare
// event (dra_events.h PrepareEvent), or a prepare_failed event when the
// call failed. `driver` only labels the event ("" leaves it out).
Json PrepareCall(DraClient& client, absl::string_view driver, DraApi api,
                 const std::vector<ClaimRef>& claims,
                 absl::Duration timeout = kDraCallTimeout);

// Likewise with NodeUnprepareResources: unprepare or unprepare_failed.
Json UnprepareCall(DraClient& client, absl::string_view driver, DraApi api,
                   const std::vector<ClaimRef>& claims,
                   absl::Duration timeout = kDraCallTimeout);

// True for a *_failed event.
bool CallFailed(const Json& event);

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_DRA_CALLS_H_
