#include "dra_test_support.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <utility>

#include "dra_fake_services.h"
#include "test_support.h"

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

}  // namespace gdp::dpctl::testing
