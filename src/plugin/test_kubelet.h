// Test support: an in-process kubelet registration service that behaves like
// the real one (wipes the directory's sockets when it starts, dials back into
// the plugin before answering Register), and a polling helper.
#ifndef GDP_PLUGIN_TEST_KUBELET_H_
#define GDP_PLUGIN_TEST_KUBELET_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp {

// Thread-safe.
class TestKubelet final : public v1beta1::Registration::Service {
 public:
  // Wipes the sockets in `dir`, as the kubelet does, then serves
  // <dir>/kubelet.sock. With accept false, Register is refused.
  explicit TestKubelet(const std::filesystem::path& dir, bool accept = true);
  ~TestKubelet() override;

  grpc::Status Register(grpc::ServerContext*,
                        const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override;

  int attempts() ABSL_LOCKS_EXCLUDED(mu_);
  int registered() ABSL_LOCKS_EXCLUDED(mu_);
  // Successful registrations of one resource name.
  int registered(const std::string& resource) ABSL_LOCKS_EXCLUDED(mu_);
  v1beta1::RegisterRequest last() ABSL_LOCKS_EXCLUDED(mu_);
  void set_accept(bool accept) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  std::filesystem::path dir_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  bool accept_ ABSL_GUARDED_BY(mu_);
  int attempts_ ABSL_GUARDED_BY(mu_) = 0;
  int registered_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> by_resource_ ABSL_GUARDED_BY(mu_);
  v1beta1::RegisterRequest last_ ABSL_GUARDED_BY(mu_);
};

// Polls `cond` every 10 ms for up to 5 s; returns its last value.
template <typename F>
bool Eventually(F cond) {
  for (int i = 0; i < 500; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

}  // namespace gdp

#endif  // GDP_PLUGIN_TEST_KUBELET_H_
