#include "event_printer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace gdp::dpctl {
namespace {

std::string Str(const Json& event, const char* key) {
  auto it = event.find(key);
  if (it == event.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// The field `key`, or null when it is missing (const operator[] would be
// undefined behaviour then).
const Json& Field(const Json& object, const char* key) {
  static const Json* const kNull = new Json();
  auto it = object.find(key);
  return it == object.end() ? *kNull : *it;
}

// "<event>" or "<event> <resource>".
std::string Head(const Json& event) {
  std::string head = Str(event, "event");
  std::string resource = Str(event, "resource");
  if (!resource.empty()) absl::StrAppend(&head, " ", resource);
  return head;
}

std::string List(const Json& array) {
  std::vector<std::string> items;
  for (const Json& item : array) {
    items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
  }
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

std::string ErrorText(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  return absl::StrCat(Str(error, "code"), ": ", Str(error, "message"));
}

std::string DevicesText(const Json& event) {
  std::string text = absl::StrCat(Head(event), ": ", Str(event, "healthy"), "/",
                                  Str(event, "total"), " healthy");
  std::vector<std::string> items;
  for (const Json& d : Field(event, "devices")) {
    std::string item = absl::StrCat(Str(d, "id"), " (", Str(d, "health"));
    if (!Field(d, "numa").empty()) {
      std::vector<std::string> nodes;
      for (const Json& n : Field(d, "numa")) nodes.push_back(n.dump());
      absl::StrAppend(&item, ", numa ", absl::StrJoin(nodes, ","));
    }
    absl::StrAppend(&item, ")");
    const std::string reason = Str(d, "reason");
    if (!reason.empty()) absl::StrAppend(&item, ": ", reason);
    items.push_back(item);
  }
  // One device per line: a node has up to thousands of them.
  for (const std::string& item : items) absl::StrAppend(&text, "\n  ", item);
  return text;
}

// "<id> (<health>[, numa N], gpu <index>[ <uuid>][, mig gi G ci C]
// [, replica K of <unit> | , unit <unit>])[: <reason>]" per device; the unit
// only where it is not the ID, the UUID only where it is not the unit.
std::string StatusEventText(const Json& event) {
  std::string text = absl::StrCat(Head(event), ": ", Str(event, "healthy"), "/",
                                  Str(event, "total"), " healthy");
  for (const Json& d : Field(event, "devices")) {
    std::string item = absl::StrCat(Str(d, "id"), " (", Str(d, "health"));
    if (d.contains("numa_node")) {
      absl::StrAppend(&item, ", numa ", Str(d, "numa_node"));
    }
    // The GPU's UUID unless the unit (shown below) is the GPU itself.
    const std::string unit = Str(d, "visible_id");
    absl::StrAppend(&item, ", gpu ", Str(d, "gpu_index"));
    if (Str(d, "gpu_uuid") != unit) {
      absl::StrAppend(&item, " ", Str(d, "gpu_uuid"));
    }
    if (d.contains("mig_gi")) {
      absl::StrAppend(&item, ", mig gi ", Str(d, "mig_gi"), " ci ",
                      Str(d, "mig_ci"));
    }
    if (d.contains("replica")) {
      absl::StrAppend(&item, ", replica ", Str(d, "replica"), " of ", unit);
    } else if (unit != Str(d, "id")) {
      absl::StrAppend(&item, ", unit ", unit);
    }
    absl::StrAppend(&item, ")");
    const std::string reason = Str(d, "reason");
    if (!reason.empty()) absl::StrAppend(&item, ": ", reason);
    absl::StrAppend(&text, "\n  ", item);
  }
  return text;
}

}  // namespace

std::string ContainerResponseText(const Json& r) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : Field(r, "envs").items()) {
    parts.push_back(absl::StrCat("env ", key, "=", value.get<std::string>()));
  }
  for (const Json& m : Field(r, "mounts")) {
    parts.push_back(absl::StrCat("mount ", Str(m, "host_path"), " -> ",
                                 Str(m, "container_path"),
                                 m.value("read_only", false) ? " ro" : " rw"));
  }
  for (const Json& d : Field(r, "devices")) {
    parts.push_back(absl::StrCat("device ", Str(d, "host_path"), " -> ",
                                 Str(d, "container_path"), " ",
                                 Str(d, "permissions")));
  }
  for (const auto& [key, value] : Field(r, "annotations").items()) {
    parts.push_back(
        absl::StrCat("annotation ", key, "=", value.get<std::string>()));
  }
  for (const Json& c : Field(r, "cdi_devices")) {
    parts.push_back(absl::StrCat("cdi ", c.get<std::string>()));
  }
  if (parts.empty()) return " empty response";
  return "\n  " + absl::StrJoin(parts, "\n  ");
}

std::string EventText(const Json& event) {
  const std::string kind = Str(event, "event");
  if (kind == "listening") return "listening on " + Str(event, "socket");
  if (kind == "register") {
    std::string text = absl::StrCat("register ", Str(event, "resource"),
                                    " (endpoint ", Str(event, "endpoint"),
                                    ", version ", Str(event, "version"), "): ");
    if (event.value("ok", false)) return text + "ok";
    return absl::StrCat(text, "refused: ", Str(event, "error"));
  }
  if (kind == "options") {
    return absl::StrCat(
        Head(event), ": pre_start_required=", Str(event, "pre_start_required"),
        " get_preferred_allocation_available=",
        Str(event, "get_preferred_allocation_available"));
  }
  if (kind == "devices") return DevicesText(event);
  if (kind == "status") return StatusEventText(event);
  if (kind == "stream_closed") {
    return absl::StrCat(Head(event), ": ", Str(event, "error"));
  }
  if (kind == "preferred") {
    std::string text = absl::StrCat(Head(event), " pod ", Str(event, "pod"),
                                    ": size ", Str(event, "size"), " from ",
                                    List(Field(event, "available")), " -> ");
    if (event.contains("error")) {
      return absl::StrCat(text, "error: ", ErrorText(Field(event, "error")));
    }
    return text + List(Field(event, "devices"));
  }
  if (kind == "allocate") {
    std::string text = absl::StrCat(Head(event), " pod ", Str(event, "pod"),
                                    " ", List(Field(event, "devices")), ":");
    if (event.contains("error")) {
      return absl::StrCat(text, " error: ", ErrorText(Field(event, "error")));
    }
    return text + ContainerResponseText(Field(event, "response"));
  }
  if (kind == "allocate_failed") {
    return absl::StrCat(Head(event), " pod ", Str(event, "pod"), ": ",
                        Str(event, "error"));
  }
  if (kind == "prestart") {
    std::string text = absl::StrCat(Head(event), " pod ", Str(event, "pod"),
                                    " ", List(Field(event, "devices")), ": ");
    if (event.value("ok", false)) return text + "ok";
    return absl::StrCat(text, "error: ", ErrorText(Field(event, "error")));
  }
  if (kind == "freed") {
    return absl::StrCat(Head(event), " pod ", Str(event, "pod"), ": ",
                        List(Field(event, "devices")));
  }
  if (kind == "command_error") {
    return absl::StrCat("command_error \"", Str(event, "command"),
                        "\": ", Str(event, "error"));
  }
  return event.dump();
}

EventPrinter::EventPrinter(std::ostream* out, OutputFormat format)
    : out_(out), format_(format) {}

void EventPrinter::Emit(const Json& event) {
  // Invalid UTF-8 from a plugin (device IDs are arbitrary bytes on the wire)
  // is replaced rather than thrown on.
  std::string line =
      format_ == OutputFormat::kJson
          ? event.dump(-1, ' ', false, Json::error_handler_t::replace)
          : EventText(event);
  absl::MutexLock lock(&mu_);
  *out_ << line << '\n';
  out_->flush();
}

}  // namespace gdp::dpctl
