#include "plugin/test_kubelet.h"

namespace gdp {

namespace fs = std::filesystem;

TestKubelet::TestKubelet(const fs::path& dir, bool accept)
    : dir_(dir), accept_(accept) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_socket()) fs::remove(e.path());
  }
  grpc::ServerBuilder b;
  b.AddListeningPort("unix:" + (dir / "kubelet.sock").string(),
                     grpc::InsecureServerCredentials());
  b.RegisterService(this);
  server_ = b.BuildAndStart();
}

TestKubelet::~TestKubelet() { server_->Shutdown(); }

grpc::Status TestKubelet::Register(grpc::ServerContext*,
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
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1beta1::DevicePluginOptions opts;
  grpc::Status s = stub->GetDevicePluginOptions(&ctx, {}, &opts);
  if (!s.ok()) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, "dial back failed");
  }
  absl::MutexLock lock(&mu_);
  registered_++;
  by_resource_[req->resource_name()]++;
  return grpc::Status::OK;
}

int TestKubelet::attempts() {
  absl::MutexLock lock(&mu_);
  return attempts_;
}

int TestKubelet::registered() {
  absl::MutexLock lock(&mu_);
  return registered_;
}

int TestKubelet::registered(const std::string& resource) {
  absl::MutexLock lock(&mu_);
  auto it = by_resource_.find(resource);
  return it == by_resource_.end() ? 0 : it->second;
}

v1beta1::RegisterRequest TestKubelet::last() {
  absl::MutexLock lock(&mu_);
  return last_;
}

void TestKubelet::set_accept(bool accept) {
  absl::MutexLock lock(&mu_);
  accept_ = accept;
}

}  // namespace gdp
