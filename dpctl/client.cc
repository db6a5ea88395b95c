#include "client.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "events.h"
#include "json_fields.h"
#include "plugin_client.h"

namespace gdp::dpctl {
namespace {

void PrintJson(const Json& json, std::ostream& out) {
  out << json.dump(-1, ' ', false, Json::error_handler_t::replace) << std::endl;
}

// A client of config.socket, or null after printing why not.
std::shared_ptr<PluginClient> Connect(const ClientConfig& config,
                                      std::ostream& out, std::ostream& err) {
  auto client = std::make_shared<PluginClient>(config.socket, config.timeout);
  absl::Status status = client->Connect(config.timeout, /*fail_fast=*/true);
  if (status.ok()) return client;
  PrintClientError(config.format, status, out, err);
  return nullptr;
}

// Prints `status` as the error of a call; returns kExitRpcError.
int CallError(const ClientConfig& config, const absl::Status& status,
              std::ostream& out, std::ostream& err) {
  PrintClientError(config.format, status, out, err);
  return kExitRpcError;
}

// Prints {"container_responses": list}, or "container <i>:<text(item)>"
// per item; returns kExitOk.
int PrintContainers(const ClientConfig& config, const Json& list,
                    std::string (*text)(const Json& item), std::ostream& out) {
  if (config.format == OutputFormat::kJson) {
    PrintJson(Json{{"container_responses", list}}, out);
  } else {
    for (size_t i = 0; i < list.size(); ++i) {
      out << "container " << i << ":" << text(list[i]) << std::endl;
    }
  }
  return kExitOk;
}

// " a, b": the device IDs of a preferred allocation.
std::string PreferredText(const Json& item) {
  std::vector<std::string> ids;
  for (const Json& id : JsonField(item, "devices")) {
    ids.push_back(id.get<std::string>());
  }
  return " " + absl::StrJoin(ids, ", ");
}

}  // namespace

void PrintClientError(OutputFormat format, absl::string_view code,
                      absl::string_view message, std::ostream& out,
                      std::ostream& err) {
  if (format == OutputFormat::kJson) {
    PrintJson(Json{{"error",
                    {{"code", std::string(code)},
                     {"message", std::string(message)}}}},
              out);
  } else {
    err << "error: " << code << (message.empty() ? "" : ": ") << message
        << std::endl;
  }
}

void PrintClientError(OutputFormat format, const absl::Status& status,
                      std::ostream& out, std::ostream& err) {
  PrintClientError(format, absl::StatusCodeToString(status.code()),
                   status.message(), out, err);
}

int RunList(const ClientConfig& config, bool watch,
            std::optional<absl::Duration> watch_for, std::ostream& out,
            std::ostream& err) {
  std::shared_ptr<PluginClient> client = Connect(config, out, err);
  if (client == nullptr) return kExitConnectError;
  absl::StatusOr<v1beta1::DevicePluginOptions> options =
      client->GetDevicePluginOptions();
  if (!options.ok()) return CallError(config, options.status(), out, err);
  EventPrinter printer(&out, config.format);
  printer.Emit(OptionsEvent("", *options));

  const absl::Time deadline =
      watch ? (watch_for ? absl::Now() + *watch_for : absl::InfiniteFuture())
            : absl::Now() + config.timeout;
  int messages = 0;
  // Reasons come from our DeviceStatus service, asked after each list; a
  // plugin without it (UNIMPLEMENTED) is listed as the kubelet sees it.
  bool ask_status = true;
  absl::Status status = client->ListAndWatch(
      [&](const v1beta1::ListAndWatchResponse& message) {
        std::optional<status::v1::ListResponse> reasons;
        if (ask_status) {
          absl::StatusOr<status::v1::ListResponse> answer =
              client->ListStatus();
          if (answer.ok()) {
            reasons = *std::move(answer);
          } else {
            ask_status = false;
            if (!absl::IsUnimplemented(answer.status())) {
              err << "warning: listing without health reasons: "
                  << StatusText(answer.status()) << std::endl;
            }
          }
        }
        printer.Emit(
            DevicesEvent("",
                         std::vector<v1beta1::Device>(message.devices().begin(),
                                                      message.devices().end()),
                         reasons.has_value() ? &*reasons : nullptr));
        ++messages;
        return watch;
      },
      deadline);
  if (!watch && messages > 0) return kExitOk;
  if (watch && status.ok()) {
    printer.Emit(StreamClosedEvent("", status));
    return kExitOk;
  }
  if (watch && watch_for && absl::IsDeadlineExceeded(status)) return kExitOk;
  if (status.ok()) {
    status = absl::UnknownError(
        "the plugin ended ListAndWatch before sending a device list");
  }
  return CallError(config, status, out, err);
}

int RunStatus(const ClientConfig& config, std::ostream& out,
              std::ostream& err) {
  std::shared_ptr<PluginClient> client = Connect(config, out, err);
  if (client == nullptr) return kExitConnectError;
  absl::StatusOr<status::v1::ListResponse> answer = client->ListStatus();
  if (!answer.ok()) {
    absl::Status error = answer.status();
    if (absl::IsUnimplemented(error)) {
      error = absl::UnimplementedError(absl::StrCat(
          client->target(),
          " does not serve gdp.status.v1.DeviceStatus (a plugin with only "
          "the kubelet's API?); `dpctl list` shows its devices"));
    }
    return CallError(config, error, out, err);
  }
  EventPrinter printer(&out, config.format);
  printer.Emit(StatusEvent(*answer));
  return kExitOk;
}

int RunAllocate(const ClientConfig& config,
                const std::vector<std::vector<std::string>>& containers,
                int repeat, std::ostream& out, std::ostream& err) {
  std::shared_ptr<PluginClient> client = Connect(config, out, err);
  if (client == nullptr) return kExitConnectError;
  v1beta1::AllocateRequest request;
  for (const std::vector<std::string>& ids : containers) {
    v1beta1::ContainerAllocateRequest* container =
        request.add_container_requests();
    for (const std::string& id : ids) container->add_devices_ids(id);
  }
  absl::StatusOr<v1beta1::AllocateResponse> response;
  std::vector<int64_t> micros;
  for (int i = 0; i < std::max(repeat, 1); ++i) {
    const absl::Time start = absl::Now();
    response = client->Allocate(request);
    if (!response.ok()) return CallError(config, response.status(), out, err);
    micros.push_back(absl::ToInt64Microseconds(absl::Now() - start));
  }
  Json list = Json::array();
  for (const v1beta1::ContainerAllocateResponse& container :
       response->container_responses()) {
    list.push_back(ContainerResponseJson(container));
  }
  PrintContainers(config, list, &ContainerResponseText, out);
  if (repeat > 1) {
    std::sort(micros.begin(), micros.end());
    auto at = [&micros](double q) {
      return micros[std::min(micros.size() - 1,
                             static_cast<size_t>(q * micros.size()))];
    };
    if (config.format == OutputFormat::kJson) {
      PrintJson(Json{{"calls", micros.size()},
                     {"p50_us", at(0.50)},
                     {"p99_us", at(0.99)},
                     {"max_us", micros.back()}},
                out);
    } else {
      out << micros.size() << " calls: p50 " << at(0.50) << " us, p99 "
          << at(0.99) << " us, max " << micros.back() << " us" << std::endl;
    }
  }
  return kExitOk;
}

int RunPreferred(const ClientConfig& config,
                 const std::vector<std::string>& available,
                 const std::vector<std::string>& must_include, int size,
                 std::ostream& out, std::ostream& err) {
  std::shared_ptr<PluginClient> client = Connect(config, out, err);
  if (client == nullptr) return kExitConnectError;
  v1beta1::PreferredAllocationRequest request;
  v1beta1::ContainerPreferredAllocationRequest* container =
      request.add_container_requests();
  for (const std::string& id : available) {
    container->add_available_deviceids(id);
  }
  for (const std::string& id : must_include) {
    container->add_must_include_deviceids(id);
  }
  container->set_allocation_size(size);
  absl::StatusOr<v1beta1::PreferredAllocationResponse> response =
      client->GetPreferredAllocation(request);
  if (!response.ok()) return CallError(config, response.status(), out, err);
  Json list = Json::array();
  for (const v1beta1::ContainerPreferredAllocationResponse& c :
       response->container_responses()) {
    Json ids = Json::array();
    for (const std::string& id : c.deviceids()) ids.push_back(id);
    list.push_back(Json{{"devices", ids}});
  }
  return PrintContainers(config, list, &PreferredText, out);
}

}  // namespace gdp::dpctl
