#include "dra_event_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "json_fields.h"

namespace gdp::dpctl {
namespace {

std::string Retry(const Json& event) {
  if (!event.contains("retry_in_ms")) return "";
  return absl::StrCat(" (retry in ", JsonStr(event, "retry_in_ms"), " ms)");
}

std::string Plural(size_t n, absl::string_view word) {
  return absl::StrCat(n, " ", word, n == 1 ? "" : "s");
}

std::string HealthText(const Json& event) {
  int healthy = 0;
  std::string lines;
  for (const Json& d : JsonField(event, "devices")) {
    if (JsonStr(d, "health") == "Healthy") ++healthy;
    const int64_t updated = d.value("last_updated", int64_t{0});
    absl::StrAppend(
        &lines, "\n  ", JsonStr(d, "pool"), "/", JsonStr(d, "device"), " (",
        JsonStr(d, "health"), ", updated ",
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(updated),
                         absl::UTCTimeZone()));
    if (d.value("timeout_seconds", int64_t{0}) > 0) {
      absl::StrAppend(&lines, ", timeout ", JsonStr(d, "timeout_seconds"),
                      " s");
    }
    absl::StrAppend(&lines, ")");
    const std::string message = JsonStr(d, "message");
    if (!message.empty()) absl::StrAppend(&lines, ": ", message);
  }
  return absl::StrCat(EventHead(event), ": ", healthy, "/",
                      JsonField(event, "devices").size(), " healthy", lines);
}

// prepare and unprepare: a head line, then one line per device or claim.
std::string ClaimsText(const Json& event) {
  const Json& claims = JsonField(event, "claims");
  const Json& missing = JsonField(event, "missing");
  std::string text = absl::StrCat(
      EventHead(event), " (api ", JsonStr(event, "api"), ", ",
      JsonStr(event, "elapsed_ms"), " ms): ", Plural(claims.size(), "claim"));
  if (!missing.empty())
    absl::StrAppend(&text, ", ", missing.size(), " missing");
  for (const auto& [uid, claim] : claims.items()) {
    const std::string error = JsonStr(claim, "error");
    if (!error.empty()) {
      absl::StrAppend(&text, "\n  ", uid, ": error: ", error);
      continue;
    }
    if (!claim.contains("devices")) {  // unprepare
      absl::StrAppend(&text, "\n  ", uid, ": ok");
      continue;
    }
    if (JsonField(claim, "devices").empty()) {
      absl::StrAppend(&text, "\n  ", uid, ": no devices");
    }
    for (const Json& d : JsonField(claim, "devices")) {
      absl::StrAppend(&text, "\n  ", uid, ": ", JsonStr(d, "pool"), "/",
                      JsonStr(d, "device"));
      if (!JsonField(d, "requests").empty()) {
        absl::StrAppend(&text, " requests ",
                        JsonList(JsonField(d, "requests")));
      }
      if (d.contains("share_id")) {
        absl::StrAppend(&text, " share ", JsonStr(d, "share_id"));
      }
      absl::StrAppend(&text, " -> ", JsonList(JsonField(d, "cdi_ids")));
    }
  }
  for (const Json& uid : missing) {
    absl::StrAppend(&text, "\n  ", uid.get<std::string>(),
                    ": missing from the answer");
  }
  return text;
}

std::string DriversText(const Json& event) {
  const Json& drivers = JsonField(event, "drivers");
  if (drivers.empty()) return "drivers: none registered";
  std::string text =
      absl::StrCat("drivers: ", Plural(drivers.size(), "registration"));
  for (const Json& d : drivers) {
    absl::StrAppend(&text, "\n  ", JsonStr(d, "driver"), ": ",
                    JsonStr(d, "endpoint"), " (api ", JsonStr(d, "api"),
                    d.value("health", false) ? ", health" : "", ", socket ",
                    JsonStr(d, "socket"),
                    d.value("in_use", false) ? ")" : ", superseded)");
  }
  return text;
}

}  // namespace

std::string DraEventText(const Json& event) {
  const std::string kind = JsonStr(event, "event");
  if (kind == "listening" && event.contains("dir")) {
    return "listening for DRA plugins in " + JsonStr(event, "dir");
  }
  if (kind == "plugin_found") return "plugin_found " + JsonStr(event, "socket");
  if (kind == "plugin_error") {
    return absl::StrCat("plugin_error ", JsonStr(event, "socket"), ": ",
                        JsonStr(event, "step"), ": ", JsonStr(event, "error"),
                        Retry(event));
  }
  if (kind == "registered") {
    std::string text =
        absl::StrCat("registered ", JsonStr(event, "driver"), " (endpoint ",
                     JsonStr(event, "endpoint"), ", versions ",
                     JsonList(JsonField(event, "versions")));
    if (!event.value("ok", false)) {
      return absl::StrCat(text, "): refused: ", JsonStr(event, "error"));
    }
    return absl::StrCat(text, ", api ", JsonStr(event, "api"),
                        event.value("health", false) ? ", health" : "",
                        "): ok");
  }
  if (kind == "deregistered") {
    return absl::StrCat(EventHead(event), " (endpoint ",
                        JsonStr(event, "endpoint"), ", socket ",
                        JsonStr(event, "socket"), ")");
  }
  if (kind == "health") return HealthText(event);
  if (kind == "health_stream_ended") {
    return absl::StrCat(EventHead(event), ": ", JsonStr(event, "error"),
                        Retry(event));
  }
  if (kind == "prepare" || kind == "unprepare") return ClaimsText(event);
  if (kind == "prepare_failed" || kind == "unprepare_failed") {
    return absl::StrCat(EventHead(event), " (api ", JsonStr(event, "api"), ", ",
                        JsonStr(event, "elapsed_ms"),
                        " ms): ", JsonStr(event, "code"), ": ",
                        JsonStr(event, "message"));
  }
  if (kind == "drivers") return DriversText(event);
  if (kind == "info") {
    std::string text =
        absl::StrCat("info ", JsonStr(event, "socket"), ": type ",
                     JsonStr(event, "type"), ", name ", JsonStr(event, "name"),
                     ", endpoint ", JsonStr(event, "endpoint"), ", versions ",
                     JsonList(JsonField(event, "versions")));
    if (event.contains("error")) {
      return absl::StrCat(text,
                          "; a kubelet refuses it: ", JsonStr(event, "error"));
    }
    return absl::StrCat(text, "; a kubelet uses api ", JsonStr(event, "api"),
                        event.value("health", false) ? " and health" : "");
  }
  return EventText(event);
}

}  // namespace gdp::dpctl
