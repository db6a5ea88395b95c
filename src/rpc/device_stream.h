// A server stream that sends a DeviceSet's devices whenever they change:
// the device plugin's ListAndWatch and the DRA plugin's health stream
// (NodeWatchResources). Holds no thread while idle.
#ifndef GDP_RPC_DEVICE_STREAM_H_
#define GDP_RPC_DEVICE_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "device/device_set.h"

namespace gdp {

// Writes the latest list of a DeviceSet as a Response (made by `fill`)
// at once and after every change; at most one write is in flight, and a
// change during a write is sent (as the then-current list) when the write
// completes. Refresh() sends the current list again even if unchanged.
// Ends when the client cancels or the server shuts down. Deletes itself
// when done (the gRPC callback API's reactor contract); `on_done` runs
// first. Thread-safe.
template <typename Response>
class DeviceStream final : public grpc::ServerWriteReactor<Response> {
 public:
  using Fill = std::function<void(const DeviceList&, Response*)>;

  // `devices` must outlive the stream (the server shuts down before it
  // goes). `on_done` (may be empty) runs once when the stream ends.
  DeviceStream(DeviceSet& devices, Fill fill, std::function<void()> on_done)
      : devices_(devices),
        fill_(std::move(fill)),
        on_done_(std::move(on_done)) {
    // Subscribe before taking mu_: callbacks run under the DeviceSet's lock
    // and then take mu_, so mu_ must never be held while subscribing.
    token_ = devices_.Subscribe([this] { Changed(false); });
    absl::MutexLock lock(&mu_);
    if (!writing_) WriteLatestLocked();
  }

  // Sends the current list again, changed or not (e.g. a heartbeat).
  void Refresh() { Changed(true); }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (finish_pending_) {
      finish_pending_ = false;
      this->Finish(final_status_);
    } else if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    } else if (dirty_) {
      WriteLatestLocked();
    }
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    devices_.Unsubscribe(token_);
    if (on_done_) on_done_();
    delete this;
  }

 private:
  void Changed(bool force) {
    absl::MutexLock lock(&mu_);
    dirty_ = true;
    force_ = force_ || force;
    if (!writing_ && !finishing_) WriteLatestLocked();
  }

  void WriteLatestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    dirty_ = false;
    std::shared_ptr<const DeviceList> list = devices_.Get();
    if (list->generation == sent_generation_ && sent_once_ && !force_) return;
    force_ = false;
    sent_once_ = true;
    sent_generation_ = list->generation;
    response_.Clear();
    fill_(*list, &response_);
    writing_ = true;
    this->StartWrite(&response_);
  }

  // Finishes once; waits for an in-flight write first.
  void FinishLocked(const grpc::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finishing_) return;
    finishing_ = true;
    if (writing_) {
      finish_pending_ = true;
      final_status_ = status;
    } else {
      this->Finish(status);
    }
  }

  DeviceSet& devices_;
  const Fill fill_;
  const std::function<void()> on_done_;
  absl::Mutex mu_;
  uint64_t token_ = 0;
  Response response_ ABSL_GUARDED_BY(mu_);
  uint64_t sent_generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool sent_once_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  bool force_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_pending_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp

#endif  // GDP_RPC_DEVICE_STREAM_H_
