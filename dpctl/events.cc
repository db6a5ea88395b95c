#include "events.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "json_fields.h"

namespace gdp::dpctl {
namespace {

Json Base(absl::string_view event, absl::string_view resource,
          const Json& fields) {
  return EventJson(event, "resource", resource, fields);
}

// "devices": `list`, "total": its size, "healthy": how many are Healthy.
Json DeviceList(absl::string_view event, absl::string_view resource,
                const Json& list) {
  int healthy = 0;
  for (const Json& d : list) healthy += JsonStr(d, "health") == kHealthy;
  return Base(
      event, resource,
      {{"devices", list}, {"total", list.size()}, {"healthy", healthy}});
}

Json ErrorJson(const absl::Status& status) {
  return {{"code", absl::StatusCodeToString(status.code())},
          {"message", std::string(status.message())}};
}

Json DeviceJson(const v1beta1::Device& device,
                const std::optional<std::string>& reason) {
  Json numa = Json::array();
  if (device.has_topology()) {
    for (const v1beta1::NUMANode& node : device.topology().nodes()) {
      numa.push_back(node.id());
    }
  }
  Json j = {{"id", device.id()}, {"health", device.health()}};
  if (reason.has_value()) j["reason"] = *reason;
  j["numa"] = numa;
  return j;
}

Json StatusDeviceJson(const status::v1::Device& device) {
  Json j = {{"id", device.id()},
            {"health", device.health()},
            {"reason", device.reason()}};
  if (device.has_numa_node()) j["numa_node"] = device.numa_node();
  j["visible_id"] = device.visible_id();
  j["gpu_index"] = device.gpu_index();
  j["gpu_uuid"] = device.gpu_uuid();
  if (device.has_mig_gi()) j["mig_gi"] = device.mig_gi();
  if (device.has_mig_ci()) j["mig_ci"] = device.mig_ci();
  if (device.has_replica()) j["replica"] = device.replica();
  return j;
}

}  // namespace

std::string StatusText(const absl::Status& status) {
  const std::string code = absl::StatusCodeToString(status.code());
  return status.message().empty() ? code
                                  : absl::StrCat(code, ": ", status.message());
}

Json ContainerResponseJson(const v1beta1::ContainerAllocateResponse& r) {
  // Proto maps iterate in no fixed order; sort the keys for stable output.
  auto sorted = [](const google::protobuf::Map<std::string, std::string>& m) {
    return Json(std::map<std::string, std::string>(m.begin(), m.end()));
  };
  Json envs = sorted(r.envs());
  Json annotations = sorted(r.annotations());
  Json mounts = Json::array();
  for (const v1beta1::Mount& m : r.mounts()) {
    mounts.push_back({{"container_path", m.container_path()},
                      {"host_path", m.host_path()},
                      {"read_only", m.read_only()}});
  }
  Json devices = Json::array();
  for (const v1beta1::DeviceSpec& d : r.devices()) {
    devices.push_back({{"container_path", d.container_path()},
                       {"host_path", d.host_path()},
                       {"permissions", d.permissions()}});
  }
  Json cdi = Json::array();
  for (const v1beta1::CDIDevice& d : r.cdi_devices()) cdi.push_back(d.name());
  return {{"envs", envs},
          {"mounts", mounts},
          {"devices", devices},
          {"annotations", annotations},
          {"cdi_devices", cdi}};
}

Json ListeningEvent(absl::string_view socket) {
  return Base("listening", "", {{"socket", std::string(socket)}});
}

Json RegisterEvent(const v1beta1::RegisterRequest& request,
                   const absl::Status& result) {
  // "resource" is always present, even when empty, so a refused empty name
  // shows.
  Json j = Base("register", "",
                {{"resource", request.resource_name()},
                 {"endpoint", request.endpoint()},
                 {"version", request.version()},
                 {"ok", result.ok()}});
  if (!result.ok()) j["error"] = std::string(result.message());
  return j;
}

Json OptionsEvent(absl::string_view resource,
                  const v1beta1::DevicePluginOptions& options) {
  return Base("options", resource,
              {{"pre_start_required", options.pre_start_required()},
               {"get_preferred_allocation_available",
                options.get_preferred_allocation_available()}});
}

Json DevicesEvent(absl::string_view resource,
                  const std::vector<v1beta1::Device>& devices,
                  const status::v1::ListResponse* status) {
  // The status's device by ID.
  std::map<std::string, const status::v1::Device*> known;
  if (status != nullptr) {
    for (const status::v1::Device& d : status->devices()) known[d.id()] = &d;
  }
  Json list = Json::array();
  for (const v1beta1::Device& d : devices) {
    std::optional<std::string> reason;
    if (status != nullptr) {
      auto it = known.find(d.id());
      reason = it != known.end() && it->second->health() == d.health()
                   ? it->second->reason()
                   : "";
    }
    list.push_back(DeviceJson(d, reason));
  }
  return DeviceList("devices", resource, list);
}

Json StatusEvent(const status::v1::ListResponse& status) {
  Json list = Json::array();
  for (const status::v1::Device& d : status.devices()) {
    list.push_back(StatusDeviceJson(d));
  }
  return DeviceList("status", status.resource_name(), list);
}

Json StreamClosedEvent(absl::string_view resource, const absl::Status& status) {
  return Base("stream_closed", resource,
              {{"error", status.ok() ? "EOF" : StatusText(status)}});
}

Json PreferredEvent(absl::string_view resource, absl::string_view pod,
                    const std::vector<std::string>& available, int size,
                    const absl::StatusOr<std::vector<std::string>>& answer) {
  return Base("preferred", resource,
              {{"pod", std::string(pod)},
               {"available", JsonStrings(available)},
               {"size", size},
               answer.ok() ? Json{"devices", JsonStrings(*answer)}
                           : Json{"error", ErrorJson(answer.status())}});
}

Json AllocateEvent(
    absl::string_view resource, absl::string_view pod,
    const std::vector<std::string>& devices,
    const absl::StatusOr<v1beta1::ContainerAllocateResponse>& response) {
  return Base(
      "allocate", resource,
      {{"pod", std::string(pod)},
       {"devices", JsonStrings(devices)},
       response.ok() ? Json{"response", ContainerResponseJson(*response)}
                     : Json{"error", ErrorJson(response.status())}});
}

Json AllocateFailedEvent(absl::string_view resource, absl::string_view pod,
                         absl::string_view error) {
  return Base("allocate_failed", resource,
              {{"pod", std::string(pod)}, {"error", std::string(error)}});
}

Json PreStartEvent(absl::string_view resource, absl::string_view pod,
                   const std::vector<std::string>& devices,
                   const absl::Status& result) {
  Json j = Base("prestart", resource,
                {{"pod", std::string(pod)},
                 {"devices", JsonStrings(devices)},
                 {"ok", result.ok()}});
  if (!result.ok()) j["error"] = ErrorJson(result);
  return j;
}

Json FreedEvent(absl::string_view pod, absl::string_view resource,
                const std::vector<std::string>& devices) {
  return Base("freed", resource,
              {{"pod", std::string(pod)}, {"devices", JsonStrings(devices)}});
}

Json CommandErrorEvent(absl::string_view command, absl::string_view error) {
  return Base(
      "command_error", "",
      {{"command", std::string(command)}, {"error", std::string(error)}});
}

}  // namespace gdp::dpctl
