#include "dra_fake_services.h"

#include <utility>

namespace gdp::dpctl::testing {

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

grpc::Status FakeDraPlugin::V1Service::NodePrepareResources(
    grpc::ServerContext*, const drav1::NodePrepareResourcesRequest* request,
    drav1::NodePrepareResourcesResponse* response) {
  return state_->Prepare("v1", *request, response);
}

grpc::Status FakeDraPlugin::V1Service::NodeUnprepareResources(
    grpc::ServerContext*, const drav1::NodeUnprepareResourcesRequest* request,
    drav1::NodeUnprepareResourcesResponse* response) {
  return state_->Unprepare("v1", *request, response);
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

}  // namespace gdp::dpctl::testing
