#include "bench/bench_kubelet.h"

namespace gdp::bench {

namespace fs = std::filesystem;

BenchKubelet::BenchKubelet(const fs::path& dir) : dir_(dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_socket()) fs::remove(e.path());
  }
  started_ = absl::Now();
  grpc::ServerBuilder b;
  b.AddListeningPort("unix:" + (dir / "kubelet.sock").string(),
                     grpc::InsecureServerCredentials());
  b.RegisterService(this);
  server_ = b.BuildAndStart();
}

BenchKubelet::~BenchKubelet() {
  server_->Shutdown(std::chrono::system_clock::now());
}

grpc::Status BenchKubelet::Register(grpc::ServerContext*,
                                    const v1beta1::RegisterRequest* req,
                                    v1beta1::Empty*) {
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + (dir_ / req->endpoint()).string(),
                          grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1beta1::DevicePluginOptions opts;
  grpc::Status s = stub->GetDevicePluginOptions(&ctx, {}, &opts);
  if (!s.ok()) return s;
  absl::MutexLock lock(&mu_);
  count_++;
  last_ = absl::Now();
  return grpc::Status::OK;
}

absl::Time BenchKubelet::WaitForRegistrations(int n, absl::Duration timeout) {
  struct Target {
    const int* count;
    int n;
    bool Reached() const { return *count >= n; }
  };
  absl::MutexLock lock(&mu_);
  Target target{&count_, n};
  if (!mu_.AwaitWithTimeout(absl::Condition(&target, &Target::Reached),
                            timeout)) {
    return absl::InfinitePast();
  }
  return last_;
}

}  // namespace gdp::bench
