// Helpers for dpctl's tests: the testing kit's TempDir, an EventSink that
// records events, and a small in-process v1beta1 device plugin (optionally
// also serving our DeviceStatus service).
#ifndef GDP_DPCTL_TEST_SUPPORT_H_
#define GDP_DPCTL_TEST_SUPPORT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "events.h"
#include "grpcpp/grpcpp.h"
#include "status/v1/status.grpc.pb.h"
#include "testing/grpc_server.h"
#include "testing/temp_dir.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp::dpctl::testing {

using ::gdp::testing::TempDir;

// Records every event. Thread-safe.
class RecordingSink : public EventSink {
 public:
  void Emit(const Json& event) override;

  // Waits up to `timeout` for an event, emitted at any time so far, for
  // which `match` is true, and returns it; returns null on timeout.
  Json WaitFor(const std::function<bool(const Json&)>& match,
               absl::Duration timeout = absl::Seconds(5));
  // WaitFor the first event with "event" == kind and, when not empty,
  // "resource" == resource.
  Json WaitForEvent(const std::string& kind, const std::string& resource = "",
                    absl::Duration timeout = absl::Seconds(5));
  // Events with "event" == kind so far.
  std::vector<Json> Events(const std::string& kind);

 private:
  absl::Mutex mu_;
  std::vector<Json> events_ ABSL_GUARDED_BY(mu_);
};

v1beta1::Device MakeDevice(const std::string& id,
                           const std::string& health = "Healthy",
                           const std::vector<int64_t>& numa = {});

// A DeviceStatus device for a whole GPU: visible_id and gpu_uuid are `id`,
// gpu_index 0, no NUMA node, MIG instance or replica.
status::v1::Device MakeStatusDevice(const std::string& id,
                                    const std::string& health = "Healthy",
                                    const std::string& reason = "");

// The fakes' gRPC server, from the kit.
using ::gdp::testing::ServeUnixSocket;
using ::gdp::testing::StopServer;

// A DevicePlugin service on a unix socket whose answers tests set.
// Allocate answers, per container, env FAKE_DEVICES=<ids joined by ','>,
// a mount /fake/<first id> -> /host/<first id> (read only), a device
// /dev/<id> for each id with permissions "rw", annotation fake=yes and CDI
// device fake.com/gpu=<id> for each id. Thread-safe.
class FakePlugin {
 public:
  explicit FakePlugin(std::string socket_path);
  ~FakePlugin();

  // Serves on the socket. Returns false on failure.
  bool Start();
  // Ends every ListAndWatch stream with OK and stops serving.
  void Stop();

  // Calls Register on the kubelet socket with this plugin's options.
  grpc::Status Register(const std::string& kubelet_socket,
                        const std::string& resource,
                        const std::string& endpoint,
                        const std::string& version = "v1beta1");

  void SetOptions(const v1beta1::DevicePluginOptions& options);
  // Replaces the device list; open streams send it.
  void SetDevices(const std::vector<v1beta1::Device>& devices);
  // GetPreferredAllocation answers these IDs (or fails with `error`).
  void SetPreferred(const std::vector<std::string>& ids);
  void SetPreferredError(const grpc::Status& error);
  // Allocate fails with `error` when it is not OK.
  void SetAllocateError(const grpc::Status& error);
  // From the next Start on, also serves DeviceStatus, whose List answers
  // `status`; later calls change the answer. Without it the plugin serves
  // only the kubelet's API, and List fails with UNIMPLEMENTED.
  void ServeStatus(const status::v1::ListResponse& status);

  std::vector<v1beta1::PreferredAllocationRequest> preferred_requests();
  std::vector<v1beta1::AllocateRequest> allocate_requests();
  std::vector<v1beta1::PreStartContainerRequest> prestart_requests();

  const std::string& socket_path() const { return socket_path_; }

 private:
  class Service;
  class StatusService;
  const std::string socket_path_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<StatusService> status_service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace gdp::dpctl::testing

#endif  // GDP_DPCTL_TEST_SUPPORT_H_
