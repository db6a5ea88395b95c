#include "event_printer.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "json_fields.h"

namespace gdp::dpctl {
namespace {

std::string ErrorText(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  return absl::StrCat(JsonStr(error, "code"), ": ", JsonStr(error, "message"));
}

// "<head>: <healthy>/<total> healthy", then one line per device (a node
// has up to thousands of them): "<id> (<health><details(d)>)[: <reason>]".
std::string DeviceLines(const Json& event,
                        std::string (*details)(const Json& d)) {
  std::string text =
      absl::StrCat(EventHead(event), ": ", JsonStr(event, "healthy"), "/",
                   JsonStr(event, "total"), " healthy");
  for (const Json& d : JsonField(event, "devices")) {
    absl::StrAppend(&text, "\n  ", JsonStr(d, "id"), " (", JsonStr(d, "health"),
                    details(d), ")");
    const std::string reason = JsonStr(d, "reason");
    if (!reason.empty()) absl::StrAppend(&text, ": ", reason);
  }
  return text;
}

// ", numa N[,M]" of a kubelet API device.
std::string NumaText(const Json& d) {
  if (JsonField(d, "numa").empty()) return "";
  std::vector<std::string> nodes;
  for (const Json& n : JsonField(d, "numa")) nodes.push_back(n.dump());
  return ", numa " + absl::StrJoin(nodes, ",");
}

// "[, numa N], gpu <index>[ <uuid>][, mig gi G ci C][, replica K of <unit> |
// , unit <unit>]" of a DeviceStatus device; the unit only where it is not
// the ID, the UUID only where it is not the unit.
std::string StatusDeviceText(const Json& d) {
  std::string text;
  if (d.contains("numa_node")) {
    absl::StrAppend(&text, ", numa ", JsonStr(d, "numa_node"));
  }
  const std::string unit = JsonStr(d, "visible_id");
  absl::StrAppend(&text, ", gpu ", JsonStr(d, "gpu_index"));
  if (JsonStr(d, "gpu_uuid") != unit) {
    absl::StrAppend(&text, " ", JsonStr(d, "gpu_uuid"));
  }
  if (d.contains("mig_gi")) {
    absl::StrAppend(&text, ", mig gi ", JsonStr(d, "mig_gi"), " ci ",
                    JsonStr(d, "mig_ci"));
  }
  if (d.contains("replica")) {
    absl::StrAppend(&text, ", replica ", JsonStr(d, "replica"), " of ", unit);
  } else if (unit != JsonStr(d, "id")) {
    absl::StrAppend(&text, ", unit ", unit);
  }
  return text;
}

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

std::string ContainerResponseText(const Json& r) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : JsonField(r, "envs").items()) {
    parts.push_back(absl::StrCat("env ", key, "=", value.get<std::string>()));
  }
  for (const Json& m : JsonField(r, "mounts")) {
    parts.push_back(absl::StrCat("mount ", JsonStr(m, "host_path"), " -> ",
                                 JsonStr(m, "container_path"),
                                 m.value("read_only", false) ? " ro" : " rw"));
  }
  for (const Json& d : JsonField(r, "devices")) {
    parts.push_back(absl::StrCat("device ", JsonStr(d, "host_path"), " -> ",
                                 JsonStr(d, "container_path"), " ",
                                 JsonStr(d, "permissions")));
  }
  for (const auto& [key, value] : JsonField(r, "annotations").items()) {
    parts.push_back(
        absl::StrCat("annotation ", key, "=", value.get<std::string>()));
  }
  for (const Json& c : JsonField(r, "cdi_devices")) {
    parts.push_back(absl::StrCat("cdi ", c.get<std::string>()));
  }
  if (parts.empty()) return " empty response";
  return "\n  " + absl::StrJoin(parts, "\n  ");
}

std::string EventText(const Json& event) {
  const std::string kind = JsonStr(event, "event");
  if (kind == "listening" && event.contains("dir")) {
    return "listening for DRA plugins in " + JsonStr(event, "dir");
  }
  if (kind == "listening") return "listening on " + JsonStr(event, "socket");
  if (kind == "register") {
    std::string text =
        absl::StrCat("register ", JsonStr(event, "resource"), " (endpoint ",
                     JsonStr(event, "endpoint"), ", version ",
                     JsonStr(event, "version"), "): ");
    if (event.value("ok", false)) return text + "ok";
    return absl::StrCat(text, "refused: ", JsonStr(event, "error"));
  }
  if (kind == "options") {
    return absl::StrCat(EventHead(event), ": pre_start_required=",
                        JsonStr(event, "pre_start_required"),
                        " get_preferred_allocation_available=",
                        JsonStr(event, "get_preferred_allocation_available"));
  }
  if (kind == "devices") return DeviceLines(event, &NumaText);
  if (kind == "status") return DeviceLines(event, &StatusDeviceText);
  if (kind == "stream_closed") {
    return absl::StrCat(EventHead(event), ": ", JsonStr(event, "error"));
  }
  if (kind == "preferred") {
    std::string text =
        absl::StrCat(EventHead(event), " pod ", JsonStr(event, "pod"),
                     ": size ", JsonStr(event, "size"), " from ",
                     JsonList(JsonField(event, "available")), " -> ");
    if (event.contains("error")) {
      return absl::StrCat(text,
                          "error: ", ErrorText(JsonField(event, "error")));
    }
    return text + JsonList(JsonField(event, "devices"));
  }
  if (kind == "allocate") {
    std::string text =
        absl::StrCat(EventHead(event), " pod ", JsonStr(event, "pod"), " ",
                     JsonList(JsonField(event, "devices")), ":");
    if (event.contains("error")) {
      return absl::StrCat(text,
                          " error: ", ErrorText(JsonField(event, "error")));
    }
    return text + ContainerResponseText(JsonField(event, "response"));
  }
  if (kind == "allocate_failed") {
    return absl::StrCat(EventHead(event), " pod ", JsonStr(event, "pod"), ": ",
                        JsonStr(event, "error"));
  }
  if (kind == "prestart") {
    std::string text =
        absl::StrCat(EventHead(event), " pod ", JsonStr(event, "pod"), " ",
                     JsonList(JsonField(event, "devices")), ": ");
    if (event.value("ok", false)) return text + "ok";
    return absl::StrCat(text, "error: ", ErrorText(JsonField(event, "error")));
  }
  if (kind == "freed") {
    return absl::StrCat(EventHead(event), " pod ", JsonStr(event, "pod"), ": ",
                        JsonList(JsonField(event, "devices")));
  }
  if (kind == "command_error") {
    return absl::StrCat("command_error \"", JsonStr(event, "command"),
                        "\": ", JsonStr(event, "error"));
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
  return event.dump();
}

EventPrinter::EventPrinter(std::ostream* out, OutputFormat format)
    : out_(out), format_(format) {}

void EventPrinter::Emit(const Json& event) {
  // Invalid UTF-8 from a plugin (device IDs and names are arbitrary bytes on
  // the wire) is replaced rather than thrown on.
  std::string line =
      format_ == OutputFormat::kJson
          ? event.dump(-1, ' ', false, Json::error_handler_t::replace)
          : EventText(event);
  absl::MutexLock lock(&mu_);
  *out_ << line << '\n';
  out_->flush();
}

}  // namespace gdp::dpctl
