#include "test_support.h"

#include <stdlib.h>

#include <filesystem>
#include <utility>

#include "absl/strings/str_join.h"

namespace gdp::dpctl::testing {

void RecordingSink::Emit(const Json& event) {
  absl::MutexLock lock(&mu_);
  events_.push_back(event);
}

Json RecordingSink::WaitFor(const std::function<bool(const Json&)>& match,
                            absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  size_t checked = 0;
  for (;;) {
    for (; checked < events_.size(); ++checked) {
      if (match(events_[checked])) return events_[checked];
    }
    auto grown = [this, checked]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return events_.size() > checked;
    };
    if (!mu_.AwaitWithDeadline(absl::Condition(&grown), deadline)) {
      return Json();
    }
  }
}

Json RecordingSink::WaitForEvent(const std::string& kind,
                                 const std::string& resource,
                                 absl::Duration timeout) {
  return WaitFor(
      [&](const Json& e) {
        return e.value("event", "") == kind &&
               (resource.empty() || e.value("resource", "") == resource);
      },
      timeout);
}

std::vector<Json> RecordingSink::Events(const std::string& kind) {
  absl::MutexLock lock(&mu_);
  std::vector<Json> found;
  for (const Json& e : events_) {
    if (e.value("event", "") == kind) found.push_back(e);
  }
  return found;
}

v1beta1::Device MakeDevice(const std::string& id, const std::string& health,
                           const std::vector<int64_t>& numa) {
  v1beta1::Device device;
  device.set_id(id);
  device.set_health(health);
  for (int64_t node : numa)
    device.mutable_topology()->add_nodes()->set_id(node);
  return device;
}

status::v1::Device MakeStatusDevice(const std::string& id,
                                    const std::string& health,
                                    const std::string& reason) {
  status::v1::Device device;
  device.set_id(id);
  device.set_health(health);
  device.set_reason(reason);
  device.set_visible_id(id);
  device.set_gpu_uuid(id);
  return device;
}

class FakePlugin::Service final : public v1beta1::DevicePlugin::Service {
 public:
  grpc::Status GetDevicePluginOptions(
      grpc::ServerContext*, const v1beta1::Empty*,
      v1beta1::DevicePluginOptions* response) override {
    absl::MutexLock lock(&mu_);
    *response = options_;
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(
      grpc::ServerContext* context, const v1beta1::Empty*,
      grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    uint64_t sent = 0;
    for (;;) {
      v1beta1::ListAndWatchResponse message;
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this, sent]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || version_ != sent;
        };
        // Wakes now and then to notice a cancelled call.
        mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(20));
        if (stopping_) return grpc::Status::OK;
        if (context->IsCancelled()) return grpc::Status::CANCELLED;
        if (version_ == sent) continue;
        sent = version_;
        for (const v1beta1::Device& d : devices_) *message.add_devices() = d;
      }
      if (!writer->Write(message)) return grpc::Status::CANCELLED;
    }
  }

  grpc::Status GetPreferredAllocation(
      grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
      v1beta1::PreferredAllocationResponse* response) override {
    absl::MutexLock lock(&mu_);
    preferred_requests_.push_back(*request);
    if (!preferred_error_.ok()) return preferred_error_;
    for (int i = 0; i < request->container_requests_size(); ++i) {
      auto* container = response->add_container_responses();
      for (const std::string& id : preferred_) container->add_deviceids(id);
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*,
                        const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override {
    absl::MutexLock lock(&mu_);
    allocate_requests_.push_back(*request);
    if (!allocate_error_.ok()) return allocate_error_;
    for (const auto& container : request->container_requests()) {
      auto* r = response->add_container_responses();
      const auto& ids = container.devices_ids();
      (*r->mutable_envs())["FAKE_DEVICES"] = absl::StrJoin(ids, ",");
      if (!ids.empty()) {
        v1beta1::Mount* mount = r->add_mounts();
        mount->set_container_path("/fake/" + ids[0]);
        mount->set_host_path("/host/" + ids[0]);
        mount->set_read_only(true);
      }
      for (const std::string& id : ids) {
        v1beta1::DeviceSpec* spec = r->add_devices();
        spec->set_container_path("/dev/" + id);
        spec->set_host_path("/dev/" + id);
        spec->set_permissions("rw");
        r->add_cdi_devices()->set_name("fake.com/gpu=" + id);
      }
      (*r->mutable_annotations())["fake"] = "yes";
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(
      grpc::ServerContext*, const v1beta1::PreStartContainerRequest* request,
      v1beta1::PreStartContainerResponse*) override {
    absl::MutexLock lock(&mu_);
    prestart_requests_.push_back(*request);
    return grpc::Status::OK;
  }

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 1;
  v1beta1::DevicePluginOptions options_ ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::Device> devices_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> preferred_ ABSL_GUARDED_BY(mu_);
  grpc::Status preferred_error_ ABSL_GUARDED_BY(mu_);
  grpc::Status allocate_error_ ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::PreferredAllocationRequest> preferred_requests_
      ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::AllocateRequest> allocate_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1beta1::PreStartContainerRequest> prestart_requests_
      ABSL_GUARDED_BY(mu_);
};

class FakePlugin::StatusService final
    : public status::v1::DeviceStatus::Service {
 public:
  grpc::Status List(grpc::ServerContext*, const status::v1::ListRequest*,
                    status::v1::ListResponse* response) override {
    absl::MutexLock lock(&mu_);
    *response = status_;
    return grpc::Status::OK;
  }

  absl::Mutex mu_;
  bool serve_ ABSL_GUARDED_BY(mu_) = false;
  status::v1::ListResponse status_ ABSL_GUARDED_BY(mu_);
};

FakePlugin::FakePlugin(std::string socket_path)
    : socket_path_(std::move(socket_path)),
      service_(std::make_unique<Service>()),
      status_service_(std::make_unique<StatusService>()) {}

FakePlugin::~FakePlugin() { Stop(); }

bool FakePlugin::Start() {
  {
    absl::MutexLock lock(&service_->mu_);
    service_->stopping_ = false;
  }
  std::vector<grpc::Service*> services = {service_.get()};
  {
    absl::MutexLock lock(&status_service_->mu_);
    if (status_service_->serve_) services.push_back(status_service_.get());
  }
  server_ = ServeUnixSocket(socket_path_, services);
  return server_ != nullptr;
}

void FakePlugin::Stop() {
  if (server_ == nullptr) return;
  {
    absl::MutexLock lock(&service_->mu_);
    service_->stopping_ = true;
  }
  StopServer(&server_);
}

grpc::Status FakePlugin::Register(const std::string& kubelet_socket,
                                  const std::string& resource,
                                  const std::string& endpoint,
                                  const std::string& version) {
  auto channel = grpc::CreateChannel("unix:" + kubelet_socket,
                                     grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version(version);
  request.set_endpoint(endpoint);
  request.set_resource_name(resource);
  {
    absl::MutexLock lock(&service_->mu_);
    *request.mutable_options() = service_->options_;
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  v1beta1::Empty response;
  return stub->Register(&context, request, &response);
}

void FakePlugin::SetOptions(const v1beta1::DevicePluginOptions& options) {
  absl::MutexLock lock(&service_->mu_);
  service_->options_ = options;
}

void FakePlugin::SetDevices(const std::vector<v1beta1::Device>& devices) {
  absl::MutexLock lock(&service_->mu_);
  service_->devices_ = devices;
  ++service_->version_;
}

void FakePlugin::SetPreferred(const std::vector<std::string>& ids) {
  absl::MutexLock lock(&service_->mu_);
  service_->preferred_ = ids;
  service_->preferred_error_ = grpc::Status::OK;
}

void FakePlugin::SetPreferredError(const grpc::Status& error) {
  absl::MutexLock lock(&service_->mu_);
  service_->preferred_error_ = error;
}

void FakePlugin::SetAllocateError(const grpc::Status& error) {
  absl::MutexLock lock(&service_->mu_);
  service_->allocate_error_ = error;
}

void FakePlugin::ServeStatus(const status::v1::ListResponse& status) {
  absl::MutexLock lock(&status_service_->mu_);
  status_service_->serve_ = true;
  status_service_->status_ = status;
}

std::vector<v1beta1::PreferredAllocationRequest>
FakePlugin::preferred_requests() {
  absl::MutexLock lock(&service_->mu_);
  return service_->preferred_requests_;
}

std::vector<v1beta1::AllocateRequest> FakePlugin::allocate_requests() {
  absl::MutexLock lock(&service_->mu_);
  return service_->allocate_requests_;
}

std::vector<v1beta1::PreStartContainerRequest> FakePlugin::prestart_requests() {
  absl::MutexLock lock(&service_->mu_);
  return service_->prestart_requests_;
}

}  // namespace gdp::dpctl::testing
