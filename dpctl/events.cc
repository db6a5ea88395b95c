#include "events.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "json_fields.h"

namespace gdp::dpctl {
namespace {

Json Base(absl::string_view event, absl::string_view resource) {
  return EventHead(event, "resource", resource);
}

}  // namespace

std::string CodeName(absl::StatusCode code) {
  return absl::StatusCodeToString(code);
}

Json ErrorJson(const absl::Status& status) {
  return {{"code", CodeName(status.code())},
          {"message", std::string(status.message())}};
}

std::string StatusText(const absl::Status& status) {
  if (status.message().empty()) return CodeName(status.code());
  return absl::StrCat(CodeName(status.code()), ": ", status.message());
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

Json ContainerResponseJson(const v1beta1::ContainerAllocateResponse& r) {
  // Proto maps iterate in no fixed order; sort the keys for stable output.
  auto sorted = [](const google::protobuf::Map<std::string, std::string>& m) {
    Json object = Json::object();
    for (const auto& [key, value] :
         std::map<std::string, std::string>(m.begin(), m.end())) {
      object[key] = value;
    }
    return object;
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
  Json j = Base("listening", "");
  j["socket"] = std::string(socket);
  return j;
}

Json RegisterEvent(const v1beta1::RegisterRequest& request,
                   const absl::Status& result) {
  Json j = Base("register", "");
  // Always present, even when empty, so a refused empty name shows.
  j["resource"] = request.resource_name();
  j["endpoint"] = request.endpoint();
  j["version"] = request.version();
  j["ok"] = result.ok();
  if (!result.ok()) j["error"] = std::string(result.message());
  return j;
}

Json OptionsEvent(absl::string_view resource,
                  const v1beta1::DevicePluginOptions& options) {
  Json j = Base("options", resource);
  j["pre_start_required"] = options.pre_start_required();
  j["get_preferred_allocation_available"] =
      options.get_preferred_allocation_available();
  return j;
}

Json DevicesEvent(absl::string_view resource,
                  const std::vector<v1beta1::Device>& devices,
                  const status::v1::ListResponse* status) {
  // The status's device by ID.
  std::map<std::string, const status::v1::Device*> known;
  if (status != nullptr) {
    for (const status::v1::Device& d : status->devices()) known[d.id()] = &d;
  }
  Json j = Base("devices", resource);
  Json list = Json::array();
  int healthy = 0;
  for (const v1beta1::Device& d : devices) {
    std::optional<std::string> reason;
    if (status != nullptr) {
      auto it = known.find(d.id());
      reason = it != known.end() && it->second->health() == d.health()
                   ? it->second->reason()
                   : "";
    }
    list.push_back(DeviceJson(d, reason));
    if (d.health() == kHealthy) ++healthy;
  }
  j["devices"] = list;
  j["total"] = devices.size();
  j["healthy"] = healthy;
  return j;
}

Json StatusEvent(const status::v1::ListResponse& status) {
  Json j = Base("status", status.resource_name());
  Json list = Json::array();
  int healthy = 0;
  for (const status::v1::Device& d : status.devices()) {
    list.push_back(StatusDeviceJson(d));
    if (d.health() == kHealthy) ++healthy;
  }
  j["devices"] = list;
  j["total"] = status.devices_size();
  j["healthy"] = healthy;
  return j;
}

Json StreamClosedEvent(absl::string_view resource, const absl::Status& status) {
  Json j = Base("stream_closed", resource);
  j["error"] = status.ok() ? std::string("EOF") : StatusText(status);
  return j;
}

Json PreferredEvent(absl::string_view resource, absl::string_view pod,
                    const std::vector<std::string>& available, int size,
                    const absl::StatusOr<std::vector<std::string>>& answer) {
  Json j = Base("preferred", resource);
  j["pod"] = std::string(pod);
  j["available"] = JsonStrings(available);
  j["size"] = size;
  if (answer.ok()) {
    j["devices"] = JsonStrings(*answer);
  } else {
    j["error"] = ErrorJson(answer.status());
  }
  return j;
}

Json AllocateEvent(
    absl::string_view resource, absl::string_view pod,
    const std::vector<std::string>& devices,
    const absl::StatusOr<v1beta1::ContainerAllocateResponse>& response) {
  Json j = Base("allocate", resource);
  j["pod"] = std::string(pod);
  j["devices"] = JsonStrings(devices);
  if (response.ok()) {
    j["response"] = ContainerResponseJson(*response);
  } else {
    j["error"] = ErrorJson(response.status());
  }
  return j;
}

Json AllocateFailedEvent(absl::string_view resource, absl::string_view pod,
                         absl::string_view error) {
  Json j = Base("allocate_failed", resource);
  j["pod"] = std::string(pod);
  j["error"] = std::string(error);
  return j;
}

Json PreStartEvent(absl::string_view resource, absl::string_view pod,
                   const std::vector<std::string>& devices,
                   const absl::Status& result) {
  Json j = Base("prestart", resource);
  j["pod"] = std::string(pod);
  j["devices"] = JsonStrings(devices);
  j["ok"] = result.ok();
  if (!result.ok()) j["error"] = ErrorJson(result);
  return j;
}

Json FreedEvent(absl::string_view pod, absl::string_view resource,
                const std::vector<std::string>& devices) {
  Json j = Base("freed", resource);
  j["pod"] = std::string(pod);
  j["devices"] = JsonStrings(devices);
  return j;
}

Json CommandErrorEvent(absl::string_view command, absl::string_view error) {
  Json j = Base("command_error", "");
  j["command"] = std::string(command);
  j["error"] = std::string(error);
  return j;
}

}  // namespace gdp::dpctl
