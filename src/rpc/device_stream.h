// A server stream that sends a DeviceSet's devices whenever they change:
// the device plugin's ListAndWatch and the DRA plugin's health stream
// (NodeWatchResources), on the async API (async_call.h). Holds no thread
// while idle.
#ifndef GDP_RPC_DEVICE_STREAM_H_
#define GDP_RPC_DEVICE_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "device/device_set.h"
#include "rpc/async_call.h"

namespace gdp {

// A server-streaming method that streams a DeviceSet.
template <typename Req, typename Resp>
struct DeviceStreamMethod {
  using Writer = grpc::ServerAsyncWriter<Resp>;
  std::function<void(grpc::ServerContext*, Req*, Writer*,
                     grpc::ServerCompletionQueue*, void*)>
      request;
  DeviceSet* devices = nullptr;  // outlives the server
  // Makes the response for a list.
  std::function<void(const DeviceList&, Resp*)> fill;
  // Runs on the queue's thread when a stream opens. `refresh` resends the
  // stream's current list, changed or not; it may be called from any
  // thread until the stream ends. Returns what runs when the stream ends
  // (may be empty); after that `refresh` must not be called.
  std::function<std::function<void()>(std::function<void()> refresh)> on_open;
};

// One stream, from its arming to its end: writes the latest list at once
// and after every change; at most one write is in flight, and a change
// during a write is sent (as the then-current list) when it completes.
// Ends when the client cancels or the server shuts down. Deletes itself.
// Thread-safe.
template <typename Req, typename Resp>
class DeviceStreamCall final {
 public:
  // Arms the next stream of `method` (which must outlive the server) unless
  // the server is stopping.
  static void Arm(const DeviceStreamMethod<Req, Resp>& method,
                  CallQueue& queue) {
    if (queue.stopping.load()) return;
    auto* call = new DeviceStreamCall(method, queue);
    call->ctx_.AsyncNotifyWhenDone(static_cast<CqTag*>(&call->done_));
    method.request(&call->ctx_, &call->req_, &call->writer_, queue.cq,
                   static_cast<CqTag*>(&call->accepted_));
  }

 private:
  // A completion that calls one of our methods.
  class Event final : public CqTag {
   public:
    Event(DeviceStreamCall* call, void (DeviceStreamCall::*fn)(bool))
        : call_(call), fn_(fn) {}
    void Proceed(bool ok) override { (call_->*fn_)(ok); }

   private:
    DeviceStreamCall* const call_;
    void (DeviceStreamCall::*const fn_)(bool);
  };

  DeviceStreamCall(const DeviceStreamMethod<Req, Resp>& method,
                   CallQueue& queue)
      : method_(method), queue_(queue) {
    queue_.Born();
  }
  ~DeviceStreamCall() { queue_.Died(); }

  void OnAccepted(bool ok) {
    // The server shut down before a client came: no other completion
    // follows (the done notice comes only for a call that started).
    if (!ok) {
      delete this;
      return;
    }
    Arm(method_, queue_);
    if (method_.on_open) on_end_ = method_.on_open([this] { Changed(true); });
    // Subscribe before taking mu_: callbacks run under the DeviceSet's lock
    // and then take mu_, so mu_ must never be held while subscribing.
    token_ = method_.devices->Subscribe([this] { Changed(false); });
    absl::MutexLock lock(&mu_);
    subscribed_ = true;
    if (!writing_ && !finishing_) WriteLatestLocked();
  }

  void OnWritten(bool ok) {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (finish_pending_) {
      finish_pending_ = false;
      writer_.Finish(final_status_, static_cast<CqTag*>(&finished_));
    } else if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    } else if (dirty_) {
      WriteLatestLocked();
    }
  }

  // The call is over (the client cancelled, the server shut down, or our
  // finish went out).
  void OnDone(bool) {
    bool end;
    {
      absl::MutexLock lock(&mu_);
      done_seen_ = true;
      FinishLocked(grpc::Status::CANCELLED);
      end = finish_sent_;
    }
    if (end) End();
  }

  void OnFinished(bool) {
    bool end;
    {
      absl::MutexLock lock(&mu_);
      finish_sent_ = true;
      end = done_seen_;
    }
    if (end) End();
  }

  // Both the done notice and our finish are in: nothing else completes.
  void End() {
    method_.devices->Unsubscribe(token_);  // no Changed runs after this
    if (on_end_) on_end_();
    delete this;
  }

  void Changed(bool force) {
    absl::MutexLock lock(&mu_);
    dirty_ = true;
    force_ = force_ || force;
    if (subscribed_ && !writing_ && !finishing_) WriteLatestLocked();
  }

  void WriteLatestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    dirty_ = false;
    std::shared_ptr<const DeviceList> list = method_.devices->Get();
    if (list->generation == sent_generation_ && sent_once_ && !force_) return;
    force_ = false;
    sent_once_ = true;
    sent_generation_ = list->generation;
    response_.Clear();
    method_.fill(*list, &response_);
    writing_ = true;
    writer_.Write(response_, static_cast<CqTag*>(&written_));
  }

  // Finishes once; waits for a write in flight first (one send at a time).
  void FinishLocked(const grpc::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finishing_) return;
    finishing_ = true;
    if (writing_) {
      finish_pending_ = true;
      final_status_ = status;
    } else {
      writer_.Finish(status, static_cast<CqTag*>(&finished_));
    }
  }

  const DeviceStreamMethod<Req, Resp>& method_;
  CallQueue& queue_;
  grpc::ServerContext ctx_;
  Req req_;
  grpc::ServerAsyncWriter<Resp> writer_{&ctx_};
  Event accepted_{this, &DeviceStreamCall::OnAccepted};
  Event written_{this, &DeviceStreamCall::OnWritten};
  Event done_{this, &DeviceStreamCall::OnDone};
  Event finished_{this, &DeviceStreamCall::OnFinished};
  // Set on the queue's thread before the subscription, read by End.
  std::function<void()> on_end_;
  uint64_t token_ = 0;

  absl::Mutex mu_;
  Resp response_ ABSL_GUARDED_BY(mu_);
  uint64_t sent_generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool subscribed_ ABSL_GUARDED_BY(mu_) = false;
  bool sent_once_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  bool force_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool done_seen_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

// The request function of a generated AsyncService's server-streaming
// method, e.g. &DevicePlugin::AsyncService::RequestListAndWatch.
template <typename Owner, typename Req, typename Resp>
using StreamRequestFn = void (Owner::*)(grpc::ServerContext*, Req*,
                                        grpc::ServerAsyncWriter<Resp>*,
                                        grpc::CompletionQueue*,
                                        grpc::ServerCompletionQueue*, void*);

template <typename Service, typename Owner, typename Req, typename Resp>
DeviceStreamMethod<Req, Resp> DeviceStream(
    Service* service, StreamRequestFn<Owner, Req, Resp> request,
    DeviceSet& devices,
    std::type_identity_t<std::function<void(const DeviceList&, Resp*)>> fill,
    std::type_identity_t<
        std::function<std::function<void()>(std::function<void()>)>>
        on_open) {
  DeviceStreamMethod<Req, Resp> m;
  m.request = [service, request](grpc::ServerContext* ctx, Req* req,
                                 grpc::ServerAsyncWriter<Resp>* writer,
                                 grpc::ServerCompletionQueue* cq, void* tag) {
    (service->*request)(ctx, req, writer, cq, cq, tag);
  };
  m.devices = &devices;
  m.fill = std::move(fill);
  m.on_open = std::move(on_open);
  return m;
}

}  // namespace gdp

#endif  // GDP_RPC_DEVICE_STREAM_H_
