#include "testing/fake_dra_plugin.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "testing/grpc_server.h"
#include "util/work_queue.h"

namespace gdp::testing {

namespace drav1 = dpctl::drav1;
namespace drav1beta1 = dpctl::drav1beta1;
using dpctl::ConvertDraMessage;

namespace {}  // namespace

// Everything the services share; tests reach it through FakeDraPlugin.
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

  // NodePrepareResources on `api` ("v1" or "v1beta1", for calls): records
  // the call and answers as FakeDraPlugin describes, or fails with
  // call_error when set.
  grpc::Status Prepare(const std::string& api,
                       const drav1::NodePrepareResourcesRequest& request,
                       drav1::NodePrepareResourcesResponse* response);
  // NodeUnprepareResources, likewise.
  grpc::Status Unprepare(const std::string& api,
                         const drav1::NodeUnprepareResourcesRequest& request,
                         drav1::NodeUnprepareResourcesResponse* response);

 private:
  // Records the call; returns the error to fail it with (OK: answer).
  grpc::Status Record(
      const std::string& api, const std::string& method,
      const google::protobuf::RepeatedPtrField<drav1::Claim>& claims);

  // Records the call; unless it fails, answers each claim of `request` not
  // omitted with (this->*answer)(its UID).
  template <typename Request, typename Response, typename ClaimResponse>
  grpc::Status Answer(const std::string& api, const std::string& method,
                      const Request& request, Response* response,
                      ClaimResponse (State::*answer)(const std::string& uid));

  // The answer for one claim: the one set, or the default.
  drav1::NodePrepareResourceResponse PrepareAnswer(const std::string& uid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  drav1::NodeUnprepareResourceResponse UnprepareAnswer(const std::string& uid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};

// pluginregistration.Registration: GetInfo answers info (or fails as
// FailGetInfo says), NotifyRegistrationStatus is recorded.
class FakeDraPlugin::RegistrationService final
    : public pluginregistration::Registration::Service {
 public:
  // `state` is not owned and must outlive the service.
  explicit RegistrationService(State* state) : state_(state) {}

  grpc::Status GetInfo(grpc::ServerContext*,
                       const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* response) override;
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext*,
      const pluginregistration::RegistrationStatus* status,
      pluginregistration::RegistrationStatusResponse*) override;

 private:
  State* const state_;
};

// DRAPlugin v1 on gRPC's callback API: State::Prepare and State::Unprepare,
// run on `work`'s thread.
class FakeDraPlugin::V1Service final
    : public drav1::DRAPlugin::CallbackService {
 public:
  // `state` and `work` are not owned and must outlive the service.
  V1Service(State* state, WorkQueue* work) : state_(state), work_(work) {}

  grpc::ServerUnaryReactor* NodePrepareResources(
      grpc::CallbackServerContext* context,
      const drav1::NodePrepareResourcesRequest* request,
      drav1::NodePrepareResourcesResponse* response) override {
    return Answer(context, request, response, &State::Prepare);
  }
  grpc::ServerUnaryReactor* NodeUnprepareResources(
      grpc::CallbackServerContext* context,
      const drav1::NodeUnprepareResourcesRequest* request,
      drav1::NodeUnprepareResourcesResponse* response) override {
    return Answer(context, request, response, &State::Unprepare);
  }

 private:
  // Finishes the call with (state_->*answer)("v1", ...) on work_'s thread.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* Answer(
      grpc::CallbackServerContext* context, const Request* request,
      Response* response,
      grpc::Status (State::*answer)(const std::string& api,
                                    const Request& request,
                                    Response* response)) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    work_->Post([this, reactor, request, response, answer] {
      reactor->Finish((state_->*answer)("v1", *request, response));
    });
    return reactor;
  }

  State* const state_;
  WorkQueue* const work_;
};

// DRAPlugin v1beta1: the same, through the v1 forms of the messages.
class FakeDraPlugin::V1beta1Service final
    : public drav1beta1::DRAPlugin::Service {
 public:
  // `state` is not owned and must outlive the service.
  explicit V1beta1Service(State* state) : state_(state) {}

  grpc::Status NodePrepareResources(
      grpc::ServerContext*,
      const drav1beta1::NodePrepareResourcesRequest* request,
      drav1beta1::NodePrepareResourcesResponse* response) override;
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext*,
      const drav1beta1::NodeUnprepareResourcesRequest* request,
      drav1beta1::NodeUnprepareResourcesResponse* response) override;

 private:
  // Runs `answer` (State::Prepare or State::Unprepare) on the v1 form of
  // `request` and returns its answer in the v1beta1 form.
  template <typename V1Request, typename V1Response, typename Request,
            typename Response>
  grpc::Status AsV1(const Request& request, Response* response,
                    grpc::Status (State::*answer)(const std::string& api,
                                                  const V1Request& request,
                                                  V1Response* response));

  State* const state_;
};

// v1alpha1.DRAResourceHealth: NodeWatchResources as FakeDraPlugin
// describes.
class FakeDraPlugin::HealthService final
    : public v1alpha1::DRAResourceHealth::Service {
 public:
  // `state` is not owned and must outlive the service.
  explicit HealthService(State* state) : state_(state) {}

  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const v1alpha1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<v1alpha1::NodeWatchResourcesResponse>* writer)
      override;

 private:
  State* const state_;
};

grpc::Status FakeDraPlugin::State::Record(
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

template <typename Request, typename Response, typename ClaimResponse>
grpc::Status FakeDraPlugin::State::Answer(
    const std::string& api, const std::string& method, const Request& request,
    Response* response,
    ClaimResponse (State::*answer)(const std::string& uid)) {
  if (grpc::Status s = Record(api, method, request.claims()); !s.ok()) {
    return s;
  }
  absl::MutexLock lock(&mu);
  for (const drav1::Claim& c : request.claims()) {
    if (omitted.count(c.uid())) continue;
    (*response->mutable_claims())[c.uid()] = (this->*answer)(c.uid());
  }
  return grpc::Status::OK;
}

drav1::NodePrepareResourceResponse FakeDraPlugin::State::PrepareAnswer(
    const std::string& uid) {
  auto it = prepare.find(uid);
  if (it != prepare.end()) return it->second;
  drav1::NodePrepareResourceResponse answer;
  drav1::Device* d = answer.add_devices();
  d->set_pool_name("pool-a");
  d->set_device_name("gpu-" + uid);
  d->add_cdi_device_ids("k8s.gpu.nvidia.com/claim=" + uid);
  return answer;
}

drav1::NodeUnprepareResourceResponse FakeDraPlugin::State::UnprepareAnswer(
    const std::string& uid) {
  auto it = unprepare_errors.find(uid);
  drav1::NodeUnprepareResourceResponse answer;
  answer.set_error(it == unprepare_errors.end() ? "" : it->second);
  return answer;
}

grpc::Status FakeDraPlugin::State::Prepare(
    const std::string& api, const drav1::NodePrepareResourcesRequest& request,
    drav1::NodePrepareResourcesResponse* response) {
  return Answer(api, "prepare", request, response, &State::PrepareAnswer);
}

grpc::Status FakeDraPlugin::State::Unprepare(
    const std::string& api, const drav1::NodeUnprepareResourcesRequest& request,
    drav1::NodeUnprepareResourcesResponse* response) {
  return Answer(api, "unprepare", request, response, &State::UnprepareAnswer);
}

grpc::Status FakeDraPlugin::RegistrationService::GetInfo(
    grpc::ServerContext*, const pluginregistration::InfoRequest*,
    pluginregistration::PluginInfo* response) {
  absl::MutexLock lock(&state_->mu);
  ++state_->get_info_calls;
  if (state_->get_info_failures > 0) {
    --state_->get_info_failures;
    return state_->get_info_error;
  }
  *response = state_->info;
  return grpc::Status::OK;
}

grpc::Status FakeDraPlugin::RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext*, const pluginregistration::RegistrationStatus* status,
    pluginregistration::RegistrationStatusResponse*) {
  absl::MutexLock lock(&state_->mu);
  state_->notified.push_back(*status);
  return grpc::Status::OK;
}

template <typename V1Request, typename V1Response, typename Request,
          typename Response>
grpc::Status FakeDraPlugin::V1beta1Service::AsV1(
    const Request& request, Response* response,
    grpc::Status (State::*answer)(const std::string& api,
                                  const V1Request& request,
                                  V1Response* response)) {
  V1Response v1;
  grpc::Status s =
      (state_->*answer)("v1beta1", ConvertDraMessage<V1Request>(request), &v1);
  *response = ConvertDraMessage<Response>(v1);
  return s;
}

grpc::Status FakeDraPlugin::V1beta1Service::NodePrepareResources(
    grpc::ServerContext*,
    const drav1beta1::NodePrepareResourcesRequest* request,
    drav1beta1::NodePrepareResourcesResponse* response) {
  return AsV1(*request, response, &State::Prepare);
}

grpc::Status FakeDraPlugin::V1beta1Service::NodeUnprepareResources(
    grpc::ServerContext*,
    const drav1beta1::NodeUnprepareResourcesRequest* request,
    drav1beta1::NodeUnprepareResourcesResponse* response) {
  return AsV1(*request, response, &State::Unprepare);
}

grpc::Status FakeDraPlugin::HealthService::NodeWatchResources(
    grpc::ServerContext* context, const v1alpha1::NodeWatchResourcesRequest*,
    grpc::ServerWriter<v1alpha1::NodeWatchResourcesResponse>* writer) {
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

FakeDraPlugin::FakeDraPlugin(std::string registration, std::string endpoint)
    : registration_(std::move(registration)),
      endpoint_(std::move(endpoint)),
      state_(std::make_unique<State>()),
      work_(std::make_unique<WorkQueue>()),
      registration_service_(
          std::make_unique<RegistrationService>(state_.get())),
      v1_service_(std::make_unique<V1Service>(state_.get(), work_.get())),
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
  std::vector<grpc::Service*> services = {
      v1_service_.get(), v1beta1_service_.get(), health_service_.get()};
  if (endpoint_ == registration_) {
    services.push_back(registration_service_.get());
  }
  endpoint_server_ = ServeUnixSocket(endpoint_, services);
  return endpoint_server_ != nullptr;
}

bool FakeDraPlugin::StartRegistration() {
  if (endpoint_ == registration_) return true;
  registration_server_ =
      ServeUnixSocket(registration_, {registration_service_.get()});
  return registration_server_ != nullptr;
}

void FakeDraPlugin::StopRegistration() {
  if (registration_server_ == nullptr) return;
  StopServer(&registration_server_);
  std::error_code error;
  std::filesystem::remove(registration_, error);
}

void FakeDraPlugin::StopEndpoint() {
  if (endpoint_server_ == nullptr) return;
  {
    absl::MutexLock lock(&state_->mu);
    state_->stopping = true;
  }
  StopServer(&endpoint_server_);
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

}  // namespace gdp::testing
