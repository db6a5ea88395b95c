#include "bench/idle_streams.h"

#include <unistd.h>

#include <iostream>

#include "absl/strings/str_cat.h"

namespace gdp::bench {
namespace {

// Writes one list, then waits for the client to cancel. Deletes itself
// when done. Finish runs only from OnCancel, which gRPC calls once, also
// when the write fails (the client went away).
class HeldList final
    : public grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse> {
 public:
  explicit HeldList(int devices) {
    for (int i = 0; i < devices; ++i) {
      v1beta1::Device* d = list_.add_devices();
      d->set_id(absl::StrCat("gpu-", i));
      d->set_health("Healthy");
    }
    StartWrite(&list_);
  }

  void OnWriteDone(bool) override {}
  void OnCancel() override { Finish(grpc::Status::CANCELLED); }
  void OnDone() override { delete this; }

 private:
  v1beta1::ListAndWatchResponse list_;
};

class HeldListService final : public v1beta1::DevicePlugin::CallbackService {
 public:
  explicit HeldListService(int devices) : devices_(devices) {}

  grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>* ListAndWatch(
      grpc::CallbackServerContext*, const v1beta1::Empty*) override {
    return new HeldList(devices_);
  }

 private:
  const int devices_;
};

}  // namespace

int ServeHeldList(const std::string& socket, int devices) {
  HeldListService service(devices);
  grpc::ServerBuilder b;
  b.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  b.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  if (server == nullptr) {
    std::cerr << "idle_bench: cannot serve " << socket << "\n";
    return 1;
  }
  pause();  // until killed
  return 0;
}

HeldStream::HeldStream(const std::string& socket)
    : stub_(v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
          "unix:" + socket, grpc::InsecureChannelCredentials()))),
      thread_([this] { Loop(); }) {}

HeldStream::~HeldStream() {
  ctx_.TryCancel();
  thread_.join();
}

void HeldStream::Loop() {
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> stream =
      stub_->ListAndWatch(&ctx_, {});
  v1beta1::ListAndWatchResponse r;
  while (stream->Read(&r)) {
    absl::MutexLock lock(&mu_);
    lists_++;
    devices_ = r.devices_size();
  }
  stream->Finish();
  absl::MutexLock lock(&mu_);
  ended_ = true;
}

int HeldStream::WaitForList(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto arrived = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return lists_ > 0 || ended_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout);
  return lists_ > 0 ? devices_ : -1;
}

int HeldStream::lists() {
  absl::MutexLock lock(&mu_);
  return lists_;
}

bool HeldStream::open() {
  absl::MutexLock lock(&mu_);
  return !ended_;
}

}  // namespace gdp::bench
