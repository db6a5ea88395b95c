// A scripted in-process DRA kubelet plugin for tests and benchmarks: a
// registration socket plus an endpoint serving DRAPlugin v1 and v1beta1 and
// v1alpha1.DRAResourceHealth, with the answers a test sets. Its vocabulary
// (ClaimRef, the DRA namespaces) is dpctl's (dpctl/dra_client.h).
#ifndef GDP_TESTING_FAKE_DRA_PLUGIN_H_
#define GDP_TESTING_FAKE_DRA_PLUGIN_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "dpctl/dra_client.h"
#include "drahealth/v1alpha1/api.grpc.pb.h"

namespace gdp {
class WorkQueue;
}  // namespace gdp

namespace gdp::testing {

// Creates a unix socket file at `path` that nothing listens on (bind, then
// close). Returns false on failure.
bool MakeSocketFile(const std::string& path);

// A DeviceHealth message for NodeWatchResourcesResponse.
v1alpha1::DeviceHealth MakeDeviceHealth(const std::string& pool,
                                        const std::string& device,
                                        v1alpha1::HealthStatus health,
                                        int64_t last_updated = 1700000000,
                                        int64_t timeout_seconds = 0,
                                        const std::string& message = "");

// A DRA plugin whose answers tests set. Thread-safe.
//
// GetInfo answers info() (by default type DRAPlugin, name gpu.nvidia.com,
// the endpoint socket's path, versions v1.DRAPlugin, v1beta1.DRAPlugin,
// v1alpha1.DRAResourceHealth). NodePrepareResources answers, for each claim,
// the response set with SetPrepareAnswer, or by default one device
// pool-a/gpu-<uid> with CDI ID k8s.gpu.nvidia.com/claim=<uid>; claims given
// to Omit are left out. NodeUnprepareResources answers "" or the error set
// with SetUnprepareError. NodeWatchResources sends the last message given
// to SendHealth at once (if any) and every later one, until
// EndHealthStreams ends it with OK. DRAPlugin v1 is served as the plugin
// serves it (gRPC's callback API, each answer made on one worker thread),
// so that a benchmark may take it as the floor of a call.
class FakeDraPlugin {
 public:
  struct Call {
    std::string api;     // "v1" or "v1beta1"
    std::string method;  // "prepare" or "unprepare"
    std::vector<dpctl::ClaimRef> claims;
  };

  // `endpoint` == `registration`: one socket serves everything.
  FakeDraPlugin(std::string registration, std::string endpoint);
  // Stops serving both sockets.
  ~FakeDraPlugin();

  // Serves DRAPlugin v1, v1beta1 and the health service on the endpoint
  // (and the registration service too when the two are one socket).
  // Returns false when it cannot serve.
  bool StartEndpoint();
  // Serves the registration service on its socket (after the endpoint, as
  // the helper library does). Nothing for a shared socket. Returns false
  // when it cannot serve.
  bool StartRegistration();
  // Stops serving the registration socket and removes its file.
  void StopRegistration();
  // Ends the health streams and stops serving the endpoint (calls in
  // progress get 1 s), and removes its file.
  void StopEndpoint();

  // What GetInfo answers from now on, and what it answers now.
  void SetInfo(const pluginregistration::PluginInfo& info);
  pluginregistration::PluginInfo info();
  // The next `times` GetInfo calls fail with `error`.
  void FailGetInfo(int times, const grpc::Status& error);
  // GetInfo calls so far, failed ones included.
  int get_info_calls();
  // Waits for the next NotifyRegistrationStatus not yet returned by this
  // function; nullopt after `timeout`.
  std::optional<pluginregistration::RegistrationStatus> WaitForNotify(
      absl::Duration timeout = absl::Seconds(20));

  // NodePrepareResources answers `answer` for claim `uid` from now on.
  void SetPrepareAnswer(
      const std::string& uid,
      const dpctl::drav1::NodePrepareResourceResponse& answer);
  // NodeUnprepareResources answers `error` for claim `uid` from now on.
  void SetUnprepareError(const std::string& uid, const std::string& error);
  // Both calls leave claim `uid` out of their answers from now on.
  void Omit(const std::string& uid);
  // Prepare and unprepare fail with `error` while it is not OK.
  void SetCallError(const grpc::Status& error);
  // Every prepare and unprepare call so far, in order.
  std::vector<Call> calls();

  // Sends `message` on every open health stream, and first on later ones.
  void SendHealth(const v1alpha1::NodeWatchResourcesResponse& message);
  // Ends the health streams open now with OK.
  void EndHealthStreams();
  // Waits until at least `n` health streams were opened in all.
  bool WaitForHealthStreams(int n, absl::Duration timeout = absl::Seconds(20));

  // The two socket paths given to the constructor.
  const std::string& registration_socket() const { return registration_; }
  const std::string& endpoint_socket() const { return endpoint_; }

 private:
  class State;
  class RegistrationService;
  class V1Service;
  class V1beta1Service;
  class HealthService;

  const std::string registration_;
  const std::string endpoint_;
  std::unique_ptr<State> state_;
  // Makes the v1 answers; outlives the servers.
  std::unique_ptr<WorkQueue> work_;
  std::unique_ptr<RegistrationService> registration_service_;
  std::unique_ptr<V1Service> v1_service_;
  std::unique_ptr<V1beta1Service> v1beta1_service_;
  std::unique_ptr<HealthService> health_service_;
  std::unique_ptr<grpc::Server> registration_server_;
  std::unique_ptr<grpc::Server> endpoint_server_;
};

}  // namespace gdp::testing

#endif  // GDP_TESTING_FAKE_DRA_PLUGIN_H_
