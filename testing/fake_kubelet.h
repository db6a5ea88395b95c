// An in-process kubelet Registration service for tests and benchmarks that
// behaves like the real one: it wipes the directory's sockets when it starts
// and dials the plugin back before answering Register. dpctl (dpctl/) is the
// whole kubelet device manager, run as a process.
#ifndef GDP_TESTING_FAKE_KUBELET_H_
#define GDP_TESTING_FAKE_KUBELET_H_

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp::testing {

// Thread-safe.
class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  // Removes the unix sockets in `dir`, as a starting kubelet does, then
  // serves <dir>/kubelet.sock. With accept false, Register is refused.
  explicit FakeKubelet(const std::filesystem::path& dir, bool accept = true);
  // Stops serving at once: calls in progress are cancelled.
  ~FakeKubelet() override;

  // Counts an attempt and keeps the request. Refused (INVALID_ARGUMENT)
  // while not accepting; otherwise calls GetDevicePluginOptions on
  // <dir>/<endpoint> (10 s deadline), failing with UNKNOWN when that fails,
  // and counts a registration once it answered.
  grpc::Status Register(grpc::ServerContext*,
                        const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override;

  // Register calls so far, refused ones included.
  int attempts() ABSL_LOCKS_EXCLUDED(mu_);
  // Successful registrations so far (all resources, or one resource name).
  int registered() ABSL_LOCKS_EXCLUDED(mu_);
  int registered(const std::string& resource) ABSL_LOCKS_EXCLUDED(mu_);
  // The latest Register request (empty before the first).
  v1beta1::RegisterRequest last() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether later Register calls are accepted.
  void set_accept(bool accept) ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until at least `n` registrations completed or `timeout` passed;
  // returns the time the latest completed, or InfinitePast on timeout.
  absl::Time WaitForRegistrations(int n, absl::Duration timeout)
      ABSL_LOCKS_EXCLUDED(mu_);
  // When kubelet.sock was about to be created.
  absl::Time started() const { return started_; }

 private:
  const std::filesystem::path dir_;
  absl::Time started_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  bool accept_ ABSL_GUARDED_BY(mu_);
  int attempts_ ABSL_GUARDED_BY(mu_) = 0;
  int registered_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> by_resource_ ABSL_GUARDED_BY(mu_);
  v1beta1::RegisterRequest last_ ABSL_GUARDED_BY(mu_);
  absl::Time last_registered_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::testing

#endif  // GDP_TESTING_FAKE_KUBELET_H_
