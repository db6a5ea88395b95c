#include "testing/fake_kubelet.h"

#include <chrono>

namespace gdp::testing {

namespace fs = std::filesystem;

FakeKubelet::FakeKubelet(const fs::path& dir, bool accept)
    : dir_(dir), accept_(accept) {
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

FakeKubelet::~FakeKubelet() {
  server_->Shutdown(std::chrono::system_clock::now());
}

grpc::Status FakeKubelet::Register(grpc::ServerContext*,
                                   const v1beta1::RegisterRequest* req,
                                   v1beta1::Empty*) {
  {
    absl::MutexLock lock(&mu_);
    attempts_++;
    last_ = *req;
    if (!accept_) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "go away");
    }
  }
  // Dial back before answering, as the kubelet does.
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + (dir_ / req->endpoint()).string(),
                          grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1beta1::DevicePluginOptions opts;
  grpc::Status s = stub->GetDevicePluginOptions(&ctx, {}, &opts);
  if (!s.ok()) {
    return grpc::Status(grpc::StatusCode::UNKNOWN,
                        "dial back failed: " + s.error_message());
  }
  absl::MutexLock lock(&mu_);
  registered_++;
  by_resource_[req->resource_name()]++;
  last_registered_ = absl::Now();
  return grpc::Status::OK;
}

int FakeKubelet::attempts() {
  absl::MutexLock lock(&mu_);
  return attempts_;
}

int FakeKubelet::registered() {
  absl::MutexLock lock(&mu_);
  return registered_;
}

int FakeKubelet::registered(const std::string& resource) {
  absl::MutexLock lock(&mu_);
  auto it = by_resource_.find(resource);
  return it == by_resource_.end() ? 0 : it->second;
}

v1beta1::RegisterRequest FakeKubelet::last() {
  absl::MutexLock lock(&mu_);
  return last_;
}

void FakeKubelet::set_accept(bool accept) {
  absl::MutexLock lock(&mu_);
  accept_ = accept;
}

absl::Time FakeKubelet::WaitForRegistrations(int n, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return registered_ >= n;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&reached), timeout)) {
    return absl::InfinitePast();
  }
  return last_registered_;
}

}  // namespace gdp::testing
