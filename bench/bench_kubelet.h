// A minimal in-process kubelet for the benchmarks: serves Registration on
// <dir>/kubelet.sock (wiping the directory's sockets first, as the kubelet
// does), dials back for GetDevicePluginOptions, and timestamps each Register.
#ifndef GDP_BENCH_BENCH_KUBELET_H_
#define GDP_BENCH_BENCH_KUBELET_H_

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "v1beta1/api.grpc.pb.h"

namespace gdp::bench {

class BenchKubelet final : public v1beta1::Registration::Service {
 public:
  // Starts serving; `started` is when kubelet.sock was about to be created.
  explicit BenchKubelet(const std::filesystem::path& dir);
  ~BenchKubelet() override;

  grpc::Status Register(grpc::ServerContext* ctx,
                        const v1beta1::RegisterRequest* req,
                        v1beta1::Empty* resp) override;

  // Blocks until `n` registrations completed (dial-back included) or the
  // timeout; returns the time of the n-th, or InfinitePast on timeout.
  absl::Time WaitForRegistrations(int n, absl::Duration timeout);

  absl::Time started() const { return started_; }

 private:
  std::filesystem::path dir_;
  absl::Time started_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::bench

#endif  // GDP_BENCH_BENCH_KUBELET_H_
