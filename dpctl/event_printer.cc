#include "event_printer.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
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
  return event.dump();
}

EventPrinter::EventPrinter(std::ostream* out, OutputFormat format,
                           EventTextFn text)
    : out_(out), format_(format), text_(text) {}

void EventPrinter::Emit(const Json& event) {
  // Invalid UTF-8 from a plugin (device IDs and names are arbitrary bytes on
  // the wire) is replaced rather than thrown on.
  std::string line =
      format_ == OutputFormat::kJson
          ? event.dump(-1, ' ', false, Json::error_handler_t::replace)
          : text_(event);
  absl::MutexLock lock(&mu_);
  *out_ << line << '\n';
  out_->flush();
}

}  // namespace gdp::dpctl
