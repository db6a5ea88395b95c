#include "plugin/service.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "plugin/plugin_metrics.h"
#include "plugin/preferred.h"
#include "plugin/wire.h"
#include "rpc/device_stream.h"
#include "util/log_limiter.h"
#include "util/logging.h"
#include "util/quote.h"

namespace gdp {
namespace {

using v1beta1::ListAndWatchResponse;

// The error of container request `i`, as the kubelet will show it.
grpc::Status ForContainer(int i, const absl::Status& s) {
  return ToGrpc(absl::Status(
      s.code(), absl::StrCat("container request ", i, ": ", s.message())));
}

std::vector<std::string> Ids(
    const google::protobuf::RepeatedPtrField<std::string>& ids) {
  return std::vector<std::string>(ids.begin(), ids.end());
}

// " (N more like it not logged)" when a LogLimiter held lines back.
std::string Suppressed(uint64_t n) {
  return n == 0 ? "" : absl::StrCat(" (", n, " more refusals not logged)");
}

// Counts a refused call of `method`.
void CountRefusal(const std::string& resource, const char* method,
                  absl::StatusCode code) {
  PluginMetrics::Get()
      .refused.With({resource, method, RefusalReason(code)})
      .Increment();
}

}  // namespace

DevicePluginService::DevicePluginService(DeviceSet& devices,
                                         const Allocator& allocator,
                                         ServiceOptions options)
    : devices_(devices),
      allocator_(allocator),
      options_(options),
      allocations_(
          PluginMetrics::Get().allocations.With({options_.resource_name})),
      allocated_devices_(PluginMetrics::Get().allocated_devices.With(
          {options_.resource_name})),
      allocate_duration_(PluginMetrics::Get().duration.With(
          {options_.resource_name, kAllocateMethod})),
      preferred_duration_(PluginMetrics::Get().duration.With(
          {options_.resource_name, kPreferredMethod})),
      options_m_(Unary(
          &service_,
          &v1beta1::DevicePlugin::AsyncService::RequestGetDevicePluginOptions,
          [this](const auto& req, auto* resp) {
            return GetDevicePluginOptions(req, resp);
          })),
      list_and_watch_m_(ListAndWatchMethod()),
      preferred_m_(Unary(
          &service_,
          &v1beta1::DevicePlugin::AsyncService::RequestGetPreferredAllocation,
          [this](const auto& req, auto* resp) {
            return GetPreferredAllocation(req, resp);
          })),
      allocate_m_(Unary(
          &service_, &v1beta1::DevicePlugin::AsyncService::RequestAllocate,
          [this](const auto& req, auto* resp) { return Allocate(req, resp); })),
      pre_start_m_(
          Unary(&service_,
                &v1beta1::DevicePlugin::AsyncService::RequestPreStartContainer,
                [this](const auto& req, auto* resp) {
                  return PreStartContainer(req, resp);
                })) {}

void DevicePluginService::Arm(CallQueue& queue) {
  UnaryCall<v1beta1::Empty, v1beta1::DevicePluginOptions>::Arm(options_m_,
                                                               queue);
  DeviceStreamCall<v1beta1::Empty, ListAndWatchResponse>::Arm(list_and_watch_m_,
                                                              queue);
  UnaryCall<v1beta1::PreferredAllocationRequest,
            v1beta1::PreferredAllocationResponse>::Arm(preferred_m_, queue);
  UnaryCall<v1beta1::AllocateRequest, v1beta1::AllocateResponse>::Arm(
      allocate_m_, queue);
  UnaryCall<v1beta1::PreStartContainerRequest,
            v1beta1::PreStartContainerResponse>::Arm(pre_start_m_, queue);
}

grpc::Status DevicePluginService::GetDevicePluginOptions(
    const v1beta1::Empty&, v1beta1::DevicePluginOptions* resp) {
  VLOG(1,
       "GetDevicePluginOptions: pre-start not required, preferred "
       "allocation available");
  resp->set_pre_start_required(false);
  resp->set_get_preferred_allocation_available(true);
  return grpc::Status::OK;
}

DeviceStreamMethod<v1beta1::Empty, ListAndWatchResponse>
DevicePluginService::ListAndWatchMethod() {
  return DeviceStream(
      &service_, &v1beta1::DevicePlugin::AsyncService::RequestListAndWatch,
      devices_,
      [](const DeviceList& list, ListAndWatchResponse* out) {
        VLOG(2, "ListAndWatch: sending {} devices (generation {})",
             list.devices.size(), list.generation);
        ToWire(list, out);
      },
      [open = options_.open_streams](std::function<void()>) {
        VLOG(1, "ListAndWatch stream opened");
        if (open != nullptr) ++*open;
        return [open] {
          if (open != nullptr) --*open;
          VLOG(1, "ListAndWatch stream closed");
        };
      });
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    const v1beta1::PreferredAllocationRequest& req,
    v1beta1::PreferredAllocationResponse* resp) {
  metrics::ScopedTimer timer(preferred_duration_);
  std::shared_ptr<const DeviceList> list = devices_.Get();
  std::shared_ptr<const NodeTopology> topology =
      options_.topology != nullptr ? options_.topology->Get() : nullptr;
  for (int i = 0; i < req.container_requests_size(); ++i) {
    const auto& c = req.container_requests(i);
    auto chosen = PreferredAllocation(
        *list, Ids(c.available_deviceids()), Ids(c.must_include_deviceids()),
        c.allocation_size(), options_.shared_allocation_policy, topology.get());
    if (!chosen.ok()) {
      static LogLimiter limiter;
      if (uint64_t quiet = 0; limiter.Allow(&quiet)) {
        LOG_WARN("GetPreferredAllocation refused (container request {}): {}{}",
                 i, chosen.status().message(), Suppressed(quiet));
      }
      CountRefusal(options_.resource_name, kPreferredMethod,
                   chosen.status().code());
      return ForContainer(i, chosen.status());
    }
    VLOG(1,
         "GetPreferredAllocation: container request {}: {} of [{}] (must "
         "include [{}]): [{}]",
         i, c.allocation_size(), QuoteList(c.available_deviceids()),
         QuoteList(c.must_include_deviceids()), absl::StrJoin(*chosen, ","));
    auto* out = resp->add_container_responses();
    for (std::string& id : *chosen) out->add_deviceids(std::move(id));
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(const v1beta1::AllocateRequest& req,
                                           v1beta1::AllocateResponse* resp) {
  metrics::ScopedTimer timer(allocate_duration_);
  if (req.container_requests_size() == 0) {
    static LogLimiter limiter;
    if (uint64_t quiet = 0; limiter.Allow(&quiet)) {
      LOG_WARN("Allocate refused: request has no container requests{}",
               Suppressed(quiet));
    }
    CountRefusal(options_.resource_name, kAllocateMethod,
                 absl::StatusCode::kInvalidArgument);
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "allocate request has no container requests");
  }
  std::shared_ptr<const DeviceList> list = devices_.Get();
  for (int i = 0; i < req.container_requests_size(); ++i) {
    std::vector<std::string> ids = Ids(req.container_requests(i).devices_ids());
    auto alloc = allocator_.Allocate(*list, ids);
    if (!alloc.ok()) {
      static LogLimiter limiter;
      if (uint64_t quiet = 0; limiter.Allow(&quiet)) {
        LOG_WARN("Allocate refused (container request {}, devices {}): {}{}", i,
                 QuoteList(ids), alloc.status().message(), Suppressed(quiet));
      }
      resp->Clear();
      CountRefusal(options_.resource_name, kAllocateMethod,
                   alloc.status().code());
      return ForContainer(i, alloc.status());
    }
    VLOG(1, "Allocate: container request {}: devices {}", i, QuoteList(ids));
    ToWire(*alloc, resp->add_container_responses());
    allocated_devices_.Increment(ids.size());
  }
  allocations_.Increment();
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(
    const v1beta1::PreStartContainerRequest&,
    v1beta1::PreStartContainerResponse*) {
  VLOG(1, "PreStartContainer: nothing to do");
  return grpc::Status::OK;
}

}  // namespace gdp
