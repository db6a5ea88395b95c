// The inside of FakeDraPlugin (dra_test_support.h): the state its services
// share, and the services. Only dra_test_support.cc and
// dra_fake_services.cc include this.
#ifndef GDP_DPCTL_DRA_FAKE_SERVICES_H_
#define GDP_DPCTL_DRA_FAKE_SERVICES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "dra_test_support.h"

namespace gdp::dpctl::testing {

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

// DRAPlugin v1: State::Prepare and State::Unprepare.
class FakeDraPlugin::V1Service final : public drav1::DRAPlugin::Service {
 public:
  // `state` is not owned and must outlive the service.
  explicit V1Service(State* state) : state_(state) {}

  grpc::Status NodePrepareResources(
      grpc::ServerContext*, const drav1::NodePrepareResourcesRequest* request,
      drav1::NodePrepareResourcesResponse* response) override;
  grpc::Status NodeUnprepareResources(
      grpc::ServerContext*, const drav1::NodeUnprepareResourcesRequest* request,
      drav1::NodeUnprepareResourcesResponse* response) override;

 private:
  State* const state_;
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

}  // namespace gdp::dpctl::testing

#endif  // GDP_DPCTL_DRA_FAKE_SERVICES_H_
