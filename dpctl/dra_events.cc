#include "dra_events.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "json_fields.h"

namespace gdp::dpctl {
namespace {

int64_t Millis(absl::Duration d) { return absl::ToInt64Milliseconds(d); }

Json Base(absl::string_view event, absl::string_view driver,
          const Json& fields) {
  return EventJson(event, "driver", driver, fields);
}

// `j` with "retry_in_ms" when `retry_in` is given.
Json WithRetry(Json j, std::optional<absl::Duration> retry_in) {
  if (retry_in.has_value()) j["retry_in_ms"] = Millis(*retry_in);
  return j;
}

// The UIDs of the answer in the order the event lists them: the asked ones
// it has, in request order, then the others sorted. Appends the asked ones
// it lacks to `missing`.
template <typename Map>
std::vector<std::string> ClaimOrder(const std::vector<ClaimRef>& asked,
                                    const Map& answer, Json* missing) {
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const ClaimRef& c : asked) {
    if (!seen.insert(c.uid).second) continue;
    if (answer.count(c.uid) != 0) {
      order.push_back(c.uid);
    } else {
      missing->push_back(c.uid);
    }
  }
  std::vector<std::string> others;
  for (const auto& [uid, value] : answer) {
    if (!seen.count(uid)) others.push_back(uid);
  }
  std::sort(others.begin(), others.end());
  order.insert(order.end(), others.begin(), others.end());
  return order;
}

// A prepare or unprepare event: "claims" maps each UID of `answer` (in
// ClaimOrder) to claim_json(its answer).
template <typename Map, typename ClaimJson>
Json ClaimsEvent(absl::string_view event, absl::string_view driver, DraApi api,
                 const std::vector<ClaimRef>& asked, const Map& answer,
                 absl::Duration elapsed, ClaimJson claim_json) {
  Json missing = Json::array();
  Json claims = Json::object();
  for (const std::string& uid : ClaimOrder(asked, answer, &missing)) {
    claims[uid] = claim_json(answer.at(uid));
  }
  return Base(event, driver,
              {{"api", ApiName(api)},
               {"claims", claims},
               {"missing", missing},
               {"elapsed_ms", Millis(elapsed)}});
}

}  // namespace

std::string HealthName(v1alpha1::HealthStatus health) {
  switch (health) {
    case v1alpha1::HEALTHY:
      return "Healthy";
    case v1alpha1::UNHEALTHY:
      return "Unhealthy";
    default:
      return "Unknown";
  }
}

Json DraListeningEvent(absl::string_view dir) {
  return Base("listening", "", {{"dir", std::string(dir)}});
}

Json PluginFoundEvent(absl::string_view socket) {
  return Base("plugin_found", "", {{"socket", std::string(socket)}});
}

Json PluginErrorEvent(absl::string_view socket, absl::string_view step,
                      absl::string_view error,
                      std::optional<absl::Duration> retry_in) {
  return WithRetry(Base("plugin_error", "",
                        {{"socket", std::string(socket)},
                         {"step", std::string(step)},
                         {"error", std::string(error)}}),
                   retry_in);
}

Json RegisteredEvent(const RegistrationReport& r) {
  // "driver" is always present, even when empty, so a refused empty name
  // shows.
  Json j = Base("registered", "",
                {{"socket", r.socket},
                 {"driver", r.driver},
                 {"endpoint", r.endpoint},
                 {"versions", JsonStrings(r.versions)},
                 {"api", r.api.has_value() ? ApiName(*r.api) : ""},
                 {"health", r.health},
                 {"ok", r.error.empty()}});
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

Json DeregisteredEvent(absl::string_view driver, absl::string_view endpoint,
                       absl::string_view socket) {
  return Base(
      "deregistered", driver,
      {{"endpoint", std::string(endpoint)}, {"socket", std::string(socket)}});
}

Json HealthEvent(absl::string_view driver,
                 const v1alpha1::NodeWatchResourcesResponse& response) {
  Json devices = Json::array();
  for (const v1alpha1::DeviceHealth& d : response.devices()) {
    devices.push_back({{"pool", d.device().pool_name()},
                       {"device", d.device().device_name()},
                       {"health", HealthName(d.health())},
                       {"last_updated", d.last_updated_time()},
                       {"timeout_seconds", d.health_check_timeout_seconds()},
                       {"message", d.message()}});
  }
  return Base("health", driver, {{"devices", devices}});
}

Json HealthStreamEndedEvent(absl::string_view driver,
                            const absl::Status& status,
                            std::optional<absl::Duration> retry_in) {
  return WithRetry(Base("health_stream_ended", driver,
                        {{"error", status.ok() ? "EOF" : StatusText(status)}}),
                   retry_in);
}

Json PrepareEvent(absl::string_view driver, DraApi api,
                  const std::vector<ClaimRef>& asked,
                  const drav1::NodePrepareResourcesResponse& response,
                  absl::Duration elapsed) {
  return ClaimsEvent(
      "prepare", driver, api, asked, response.claims(), elapsed,
      [](const drav1::NodePrepareResourceResponse& claim) -> Json {
        Json devices = Json::array();
        for (const drav1::Device& d : claim.devices()) {
          Json device = {{"requests", JsonStrings(d.request_names())},
                         {"pool", d.pool_name()},
                         {"device", d.device_name()},
                         {"cdi_ids", JsonStrings(d.cdi_device_ids())}};
          if (d.has_share_id()) device["share_id"] = d.share_id();
          devices.push_back(device);
        }
        return {{"devices", devices}, {"error", claim.error()}};
      });
}

Json UnprepareEvent(absl::string_view driver, DraApi api,
                    const std::vector<ClaimRef>& asked,
                    const drav1::NodeUnprepareResourcesResponse& response,
                    absl::Duration elapsed) {
  return ClaimsEvent("unprepare", driver, api, asked, response.claims(),
                     elapsed,
                     [](const drav1::NodeUnprepareResourceResponse& claim) {
                       return Json{{"error", claim.error()}};
                     });
}

Json CallFailedEvent(absl::string_view call, absl::string_view driver,
                     DraApi api, const absl::Status& status,
                     absl::Duration elapsed) {
  return Base(absl::StrCat(call, "_failed"), driver,
              {{"api", ApiName(api)},
               {"code", absl::StatusCodeToString(status.code())},
               {"message", std::string(status.message())},
               {"elapsed_ms", Millis(elapsed)}});
}

Json DriversEvent(const std::vector<DriverReport>& drivers) {
  Json list = Json::array();
  for (const DriverReport& d : drivers) {
    list.push_back({{"driver", d.driver},
                    {"endpoint", d.endpoint},
                    {"socket", d.socket},
                    {"api", ApiName(d.api)},
                    {"health", d.health},
                    {"in_use", d.in_use}});
  }
  return Base("drivers", "", {{"drivers", list}});
}

Json InfoEvent(absl::string_view socket,
               const pluginregistration::PluginInfo& info,
               const RegistrationReport& report) {
  Json j = Base("info", "",
                {{"socket", std::string(socket)},
                 {"type", info.type()},
                 {"name", info.name()},
                 {"endpoint", info.endpoint()},
                 {"versions", JsonStrings(info.supported_versions())}});
  if (report.error.empty() && report.api.has_value()) {
    j["api"] = ApiName(*report.api);
    j["health"] = report.health;
  } else {
    j["error"] = report.error;
  }
  return j;
}

bool AllClaimsOk(const Json& event) {
  auto missing = event.find("missing");
  if (missing != event.end() && !missing->empty()) return false;
  auto claims = event.find("claims");
  if (claims == event.end()) return false;
  for (const auto& [uid, claim] : claims->items()) {
    if (!claim.value("error", std::string()).empty()) return false;
  }
  return true;
}

}  // namespace gdp::dpctl
