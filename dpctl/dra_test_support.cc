#include "dra_test_support.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <utility>

namespace gdp::dpctl::testing {

bool MakeSocketFile(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const bool ok =
      bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

v1alpha1::DeviceHealth MakeDeviceHealth(const std::string& pool,
                                        const std::string& device,
                                        v1alpha1::HealthStatus health,
                                        int64_t last_updated,
                                        int64_t timeout_seconds,
                                        const std::string& message) {
  v1alpha1::DeviceHealth h;
  h.mutable_device()->set_pool_name(pool);
  h.mutable_device()->set_device_name(device);
  h.set_health(health);
  h.set_last_updated_time(last_updated);
  h.set_health_check_timeout_seconds(timeout_seconds);
  h.set_message(message);
  return h;
}

// Everything the services share.
class FakeDraPlugin::State {
 public:
  absl::Mutex mu;
  pluginregistration::PluginInfo info ABSL_GUARDED_BY(mu);
  int get_info_failures ABSL_GUARDED_BY(mu) = 0;
  grpc::Status get_info_error ABSL_GUARDED_BY(mu);
  int get_info_calls ABSL_GUARDED_BY(mu) = 0;
  std::vector<pluginregistration::RegistrationStatus> notified
      ABSL_GUARDED_BY(mu);
  size_t notified_returned ABSL_GUARDED_BY(mu) = 0;
  std::map<std::string, drav1::NodePrepareResourceResponse> prepare
      ABSL_GUARDED_BY(mu);
  std::map<std::string, std::string> unprepare_errors ABSL_GUARDED_BY(mu);
  std::set<std::string> omitted ABSL_GUARDED_BY(mu);
  grpc::Status call_error ABSL_GUARDED_BY(mu);
  std::vector<Call> calls ABSL_GUARDED_BY(mu);
  std::optional<v1alpha1::NodeWatchResourcesResponse> health
      ABSL_GUARDED_BY(mu);
  uint64_t health_version ABSL_GUARDED_BY(mu) = 0;
  uint64_t health_ends ABSL_GUARDED_BY(mu) = 0;
  int health_streams ABSL_GUARDED_BY(mu) = 0;
  bool stopping ABSL_GUARDED_BY(mu) = false;

  // Records the call; returns the error to fail it with (OK: answer).
  grpc::Status Record(
      const std::string& api, const std::string& method,
      const google::protobuf::RepeatedPtrField<drav1::Claim>& claims) {
    absl::MutexLock lock(&mu);
    Call call{api, method, {}};
    for (const drav1::Claim& c : claims) {
      call.claims.push_back({c.namespace_(), c.name(), c.uid()});
    }
    calls.push_back(std::move(call));
    return call_error;
  }

  grpc::Status Prepare(const std::string& api,
                       const drav1::NodePrepareResourcesRequest& request,
                       drav1::NodePrepareResourcesResponse* response) {
    if (grpc::Status s = Record(api, "prepare", request.claims()); !s.ok()) {
      return s;
    }
    absl::MutexLock lock(&mu);
    for (const drav1::Claim& c : request.claims()) {
      if (omitted.count(c.uid())) continue;
      auto it = prepare.find(c.uid());
      drav1::NodePrepareResourceResponse answer;
      if (it != prepare.end()) {
        answer = it->second;
      } else {
        drav1::Device* d = answer.add_devices();
        d->set_pool_name("pool-a");
        d->set_device_name("gpu-" + c.uid());
        d->add_cdi_device_ids("k8s.gpu.nvidia.com/claim=" + c.uid());
      }
      (*response->mutable_claims())[c.uid()] = answer;
    }
    return grpc::Status::OK;
  }

  grpc::Status Unprepare(const std::string& api,
                         const drav1::NodeUnprepareResourcesRequest& request,
                         drav1::NodeUnprepareResourcesResponse* response) {
    if (grpc::Status s = Record(api, "unprepare", request.claims()); !s.ok()) {
      return s;
    }
    absl::MutexLock lock(&mu);
    for (const drav1::Claim& c : request.claims()) {
      if (omitted.count(c.uid())) continue;
      auto it = unprepare_errors.find(c.uid());
      (*response->mutable_claims())[c.uid()].set_error(
          it == unprepare_errors.end() ? "" : it->second);
    }
    return grpc::Status::OK;
  }
};

namespace {

// Between v1 and v1beta1 messages, through their shared wire format.
template <typename To, typename From>
To Convert(const From& from) {
  To to;
  to.ParseFromString(from.SerializeAsString());
  return to;
}

}  // namespace

class FakeDraPlugin::RegistrationService final
    : public pluginregistration::Registration::Service {
 public:
  explicit RegistrationService(State* state) : state_(state) {}

  grpc::Status GetInfo(grpc::ServerContext*,
                       const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* response) override {
    absl::MutexLock lock(&state_->mu);
    ++state_->get_info_calls;
    if (state_->get_info_failures > 0) {
      --state_->get_info_failures;
      return state_->get_info_error;
    }
    *response = state_->info;
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext*,
      const pluginregistration::RegistrationStatus* status,
      pluginregistration::RegistrationStatusResponse*) override {
    absl::MutexLock lock(&state_->mu);
    state_->notified.push_back(*status);
    return grpc::Status::OK;
  }

 private:
  State* const state_;
};

class FakeDraPlugin::V1Service final : public drav1::DRAPlugin::Service {
 public:
  explicit V1Service(State* state) : state_(state) {}

  grpc::Status NodePrepareResources(
      grpc::ServerContext*, const drav1::NodePrepareResourcesRequest* request,
      drav1::NodePrepareResourcesResponse* response) override {
    return state_->Prepare("v1", *request, response);
  }
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext*, const drav1::NodeUnprepareResourcesRequest* request,
      drav1::NodeUnprepareResourcesResponse* response) override {
    return state_->Unprepare("v1", *request, response);
  }

 private:
  State* const state_;
};

class FakeDraPlugin::V1beta1Service final
    : public drav1beta1::DRAPlugin::Service {
 public:
  explicit V1beta1Service(State* state) : state_(state) {}

  grpc::Status NodePrepareResources(
      grpc::ServerContext*,
      const drav1beta1::NodePrepareResourcesRequest* request,
      drav1beta1::NodePrepareResourcesResponse* response) override {
    drav1::NodePrepareResourcesResponse answer;
    grpc::Status s = state_->Prepare(
        "v1beta1", Convert<drav1::NodePrepareResourcesRequest>(*request),
        &answer);
    *response = Convert<drav1beta1::NodePrepareResourcesResponse>(answer);
    return s;
  }
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext*,
      const drav1beta1::NodeUnprepareResourcesRequest* request,
      drav1beta1::NodeUnprepareResourcesResponse* response) override {
    drav1::NodeUnprepareResourcesResponse answer;
    grpc::Status s = state_->Unprepare(
        "v1beta1", Convert<drav1::NodeUnprepareResourcesRequest>(*request),
        &answer);
    *response = Convert<drav1beta1::NodeUnprepareResourcesResponse>(answer);
    return s;
  }

 private:
  State* const state_;
};

class FakeDraPlugin::HealthService final
    : public v1alpha1::DRAResourceHealth::Service {
 public:
  explicit HealthService(State* state) : state_(state) {}

  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const v1alpha1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<v1alpha1::NodeWatchResourcesResponse>* writer)
      override {
    uint64_t sent = 0;
    uint64_t ends;
    {
      absl::MutexLock lock(&state_->mu);
      ++state_->health_streams;
      ends = state_->health_ends;
    }
    for (;;) {
      v1alpha1::NodeWatchResourcesResponse message;
      {
        absl::MutexLock lock(&state_->mu);
        auto ready = [this, sent,
                      ends]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) {
          return state_->stopping || state_->health_ends != ends ||
                 (state_->health.has_value() && state_->health_version != sent);
        };
        // Wakes now and then to notice a cancelled call.
        state_->mu.AwaitWithTimeout(absl::Condition(&ready),
                                    absl::Milliseconds(20));
        if (state_->stopping || state_->health_ends != ends) {
          return grpc::Status::OK;
        }
        if (context->IsCancelled()) return grpc::Status::CANCELLED;
        if (!state_->health.has_value() || state_->health_version == sent) {
          continue;
        }
        sent = state_->health_version;
        message = *state_->health;
      }
      if (!writer->Write(message)) return grpc::Status::CANCELLED;
    }
  }

 private:
  State* const state_;
};

FakeDraPlugin::FakeDraPlugin(std::string registration, std::string endpoint)
    : registration_(std::move(registration)),
      endpoint_(std::move(endpoint)),
      state_(std::make_unique<State>()),
      registration_service_(
          std::make_unique<RegistrationService>(state_.get())),
      v1_service_(std::make_unique<V1Service>(state_.get())),
      v1beta1_service_(std::make_unique<V1beta1Service>(state_.get())),
      health_service_(std::make_unique<HealthService>(state_.get())) {
  pluginregistration::PluginInfo info;
  info.set_type("DRAPlugin");
  info.set_name("gpu.nvidia.com");
  info.set_endpoint(endpoint_);
  for (const char* v :
       {"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"}) {
    info.add_supported_versions(v);
  }
  SetInfo(info);
}

FakeDraPlugin::~FakeDraPlugin() {
  StopRegistration();
  StopEndpoint();
}

bool FakeDraPlugin::StartEndpoint() {
  {
    absl::MutexLock lock(&state_->mu);
    state_->stopping = false;
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + endpoint_,
                           grpc::InsecureServerCredentials());
  builder.RegisterService(v1_service_.get());
  builder.RegisterService(v1beta1_service_.get());
  builder.RegisterService(health_service_.get());
  if (endpoint_ == registration_) {
    builder.RegisterService(registration_service_.get());
  }
  endpoint_server_ = builder.BuildAndStart();
  return endpoint_server_ != nullptr;
}

bool FakeDraPlugin::StartRegistration() {
  if (endpoint_ == registration_) return true;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + registration_,
                           grpc::InsecureServerCredentials());
  builder.RegisterService(registration_service_.get());
  registration_server_ = builder.BuildAndStart();
  return registration_server_ != nullptr;
}

void FakeDraPlugin::StopRegistration() {
  if (registration_server_ == nullptr) return;
  registration_server_->Shutdown(std::chrono::system_clock::now() +
                                 std::chrono::seconds(1));
  registration_server_.reset();
  std::error_code error;
  std::filesystem::remove(registration_, error);
}

void FakeDraPlugin::StopEndpoint() {
  if (endpoint_server_ == nullptr) return;
  {
    absl::MutexLock lock(&state_->mu);
    state_->stopping = true;
  }
  endpoint_server_->Shutdown(std::chrono::system_clock::now() +
                             std::chrono::seconds(1));
  endpoint_server_.reset();
  std::error_code error;
  std::filesystem::remove(endpoint_, error);
}

void FakeDraPlugin::SetInfo(const pluginregistration::PluginInfo& info) {
  absl::MutexLock lock(&state_->mu);
  state_->info = info;
}

pluginregistration::PluginInfo FakeDraPlugin::info() {
  absl::MutexLock lock(&state_->mu);
  return state_->info;
}

void FakeDraPlugin::FailGetInfo(int times, const grpc::Status& error) {
  absl::MutexLock lock(&state_->mu);
  state_->get_info_failures = times;
  state_->get_info_error = error;
}

int FakeDraPlugin::get_info_calls() {
  absl::MutexLock lock(&state_->mu);
  return state_->get_info_calls;
}

std::optional<pluginregistration::RegistrationStatus>
FakeDraPlugin::WaitForNotify(absl::Duration timeout) {
  absl::MutexLock lock(&state_->mu);
  auto arrived = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) {
    return state_->notified.size() > state_->notified_returned;
  };
  if (!state_->mu.AwaitWithTimeout(absl::Condition(&arrived), timeout)) {
    return std::nullopt;
  }
  return state_->notified[state_->notified_returned++];
}

void FakeDraPlugin::SetPrepareAnswer(
    const std::string& uid, const drav1::NodePrepareResourceResponse& answer) {
  absl::MutexLock lock(&state_->mu);
  state_->prepare[uid] = answer;
}

void FakeDraPlugin::SetUnprepareError(const std::string& uid,
                                      const std::string& error) {
  absl::MutexLock lock(&state_->mu);
  state_->unprepare_errors[uid] = error;
}

void FakeDraPlugin::Omit(const std::string& uid) {
  absl::MutexLock lock(&state_->mu);
  state_->omitted.insert(uid);
}

void FakeDraPlugin::SetCallError(const grpc::Status& error) {
  absl::MutexLock lock(&state_->mu);
  state_->call_error = error;
}

std::vector<FakeDraPlugin::Call> FakeDraPlugin::calls() {
  absl::MutexLock lock(&state_->mu);
  return state_->calls;
}

void FakeDraPlugin::SendHealth(
    const v1alpha1::NodeWatchResourcesResponse& message) {
  absl::MutexLock lock(&state_->mu);
  state_->health = message;
  ++state_->health_version;
}

void FakeDraPlugin::EndHealthStreams() {
  absl::MutexLock lock(&state_->mu);
  ++state_->health_ends;
}

bool FakeDraPlugin::WaitForHealthStreams(int n, absl::Duration timeout) {
  absl::MutexLock lock(&state_->mu);
  auto opened = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) {
    return state_->health_streams >= n;
  };
  return state_->mu.AwaitWithTimeout(absl::Condition(&opened), timeout);
}

}  // namespace gdp::dpctl::testing
