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
#include "util/logging.h"

namespace gdp {
namespace {

using v1beta1::ListAndWatchResponse;

// One ListAndWatch stream. Writes the latest list whenever the DeviceSet
// changes; at most one write is in flight, and a change that arrives during
// a write is sent (as the then-current list) when the write completes.
class ListAndWatchReactor final
    : public grpc::ServerWriteReactor<ListAndWatchResponse> {
 public:
  ListAndWatchReactor(DeviceSet& devices,
                      std::shared_ptr<std::atomic<int>> open_streams)
      : devices_(devices), open_streams_(std::move(open_streams)) {
    if (open_streams_ != nullptr) ++*open_streams_;
    // Subscribe before taking mu_: callbacks run under the DeviceSet's lock
    // and then take mu_, so mu_ must never be held while subscribing.
    token_ = devices_.Subscribe([this] { OnDevicesChanged(); });
    absl::MutexLock lock(&mu_);
    if (!writing_) WriteLatestLocked();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (finish_pending_) {
      finish_pending_ = false;
      Finish(final_status_);
    } else if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    } else if (dirty_) {
      WriteLatestLocked();
    }
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    devices_.Unsubscribe(token_);
    if (open_streams_ != nullptr) --*open_streams_;
    VLOG(1, "ListAndWatch stream closed");
    delete this;
  }

 private:
  void OnDevicesChanged() {
    absl::MutexLock lock(&mu_);
    dirty_ = true;
    if (!writing_ && !finishing_) WriteLatestLocked();
  }

  void WriteLatestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    dirty_ = false;
    std::shared_ptr<const DeviceList> list = devices_.Get();
    if (list->generation == sent_generation_) return;
    sent_generation_ = list->generation;
    response_.Clear();
    ToWire(*list, &response_);
    writing_ = true;
    VLOG(2, "ListAndWatch: sending {} devices (generation {})",
         list->devices.size(), list->generation);
    StartWrite(&response_);
  }

  // Finishes once; waits for an in-flight write first.
  void FinishLocked(const grpc::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finishing_) return;
    finishing_ = true;
    if (writing_) {
      finish_pending_ = true;
      final_status_ = status;
    } else {
      Finish(status);
    }
  }

  DeviceSet& devices_;
  const std::shared_ptr<std::atomic<int>> open_streams_;
  absl::Mutex mu_;
  uint64_t token_ = 0;
  ListAndWatchResponse response_ ABSL_GUARDED_BY(mu_);
  uint64_t sent_generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_pending_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* ctx,
                               const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

// The error of container request `i`, as the kubelet will show it.
grpc::Status ForContainer(int i, const absl::Status& s) {
  return ToGrpc(absl::Status(
      s.code(), absl::StrCat("container request ", i, ": ", s.message())));
}

std::vector<std::string> Ids(
    const google::protobuf::RepeatedPtrField<std::string>& ids) {
  return std::vector<std::string>(ids.begin(), ids.end());
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
          {options_.resource_name, kPreferredMethod})) {}

grpc::ServerUnaryReactor* DevicePluginService::GetDevicePluginOptions(
    grpc::CallbackServerContext* ctx, const v1beta1::Empty*,
    v1beta1::DevicePluginOptions* resp) {
  resp->set_pre_start_required(false);
  resp->set_get_preferred_allocation_available(true);
  return Done(ctx, grpc::Status::OK);
}

grpc::ServerWriteReactor<ListAndWatchResponse>*
DevicePluginService::ListAndWatch(grpc::CallbackServerContext*,
                                  const v1beta1::Empty*) {
  VLOG(1, "ListAndWatch stream opened");
  return new ListAndWatchReactor(devices_, options_.open_streams);
}

grpc::ServerUnaryReactor* DevicePluginService::GetPreferredAllocation(
    grpc::CallbackServerContext* ctx,
    const v1beta1::PreferredAllocationRequest* req,
    v1beta1::PreferredAllocationResponse* resp) {
  metrics::ScopedTimer timer(preferred_duration_);
  std::shared_ptr<const DeviceList> list = devices_.Get();
  std::shared_ptr<const NodeTopology> topology =
      options_.topology != nullptr ? options_.topology->Get() : nullptr;
  for (int i = 0; i < req->container_requests_size(); ++i) {
    const auto& c = req->container_requests(i);
    auto chosen = PreferredAllocation(
        *list, Ids(c.available_deviceids()), Ids(c.must_include_deviceids()),
        c.allocation_size(), options_.shared_allocation_policy, topology.get());
    if (!chosen.ok()) {
      LOG_WARN("GetPreferredAllocation refused (container request {}): {}", i,
               chosen.status().message());
      CountRefusal(options_.resource_name, kPreferredMethod,
                   chosen.status().code());
      return Done(ctx, ForContainer(i, chosen.status()));
    }
    auto* out = resp->add_container_responses();
    for (std::string& id : *chosen) out->add_deviceids(std::move(id));
  }
  return Done(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* DevicePluginService::Allocate(
    grpc::CallbackServerContext* ctx, const v1beta1::AllocateRequest* req,
    v1beta1::AllocateResponse* resp) {
  metrics::ScopedTimer timer(allocate_duration_);
  if (req->container_requests_size() == 0) {
    LOG_WARN("Allocate refused: request has no container requests");
    CountRefusal(options_.resource_name, kAllocateMethod,
                 absl::StatusCode::kInvalidArgument);
    return Done(ctx,
                grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             "allocate request has no container requests"));
  }
  std::shared_ptr<const DeviceList> list = devices_.Get();
  for (int i = 0; i < req->container_requests_size(); ++i) {
    std::vector<std::string> ids =
        Ids(req->container_requests(i).devices_ids());
    auto alloc = allocator_.Allocate(*list, ids);
    if (!alloc.ok()) {
      LOG_WARN("Allocate refused (container request {}, devices [{}]): {}", i,
               absl::StrJoin(ids, ","), alloc.status().message());
      resp->Clear();
      CountRefusal(options_.resource_name, kAllocateMethod,
                   alloc.status().code());
      return Done(ctx, ForContainer(i, alloc.status()));
    }
    VLOG(1, "Allocate: container request {}: devices [{}]", i,
         absl::StrJoin(ids, ","));
    ToWire(*alloc, resp->add_container_responses());
    allocated_devices_.Increment(ids.size());
  }
  allocations_.Increment();
  return Done(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* DevicePluginService::PreStartContainer(
    grpc::CallbackServerContext* ctx, const v1beta1::PreStartContainerRequest*,
    v1beta1::PreStartContainerResponse*) {
  return Done(ctx, grpc::Status::OK);
}

}  // namespace gdp
