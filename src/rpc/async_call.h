// Serving gRPC calls on the async (completion queue) API: one thread per
// server waits in the queue and is woken only by calls, so an idle server
// costs nothing. This file has the unary calls; device_stream.h the
// streams. Knows no GPUs.
#ifndef GDP_RPC_ASYNC_CALL_H_
#define GDP_RPC_ASYNC_CALL_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gdp {

// One operation's completion on a server's completion queue: the queue's
// thread calls Proceed with the operation's outcome.
class CqTag {
 public:
  virtual void Proceed(bool ok) = 0;

 protected:
  ~CqTag() = default;
};

// What calls are armed on: a server's completion queue, whether the server
// is stopping (then no call is armed again), and how many call objects
// live (the queue may be shut down only when none does: a call matched
// before the server's shutdown still starts operations on it).
// Thread-safe.
class CallQueue {
 public:
  grpc::ServerCompletionQueue* cq = nullptr;
  std::atomic<bool> stopping{false};

  void Born() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++live_;
  }
  void Died() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    --live_;
  }
  // Waits until no call object lives (the queue's thread must be running).
  void AwaitNoCalls() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* live) { return *live == 0; }, &live_));
  }

 private:
  absl::Mutex mu_;
  int live_ ABSL_GUARDED_BY(mu_) = 0;
};

// Ends a unary call with `status` (the response filled first). Call exactly
// once, from any thread, while the server serves: the server's shutdown
// waits for it.
using Reply = std::function<void(const grpc::Status& status)>;

// A unary method of a generated AsyncService: how to ask for its next call
// and how to answer one.
template <typename Req, typename Resp>
struct UnaryMethod {
  using Writer = grpc::ServerAsyncResponseWriter<Resp>;
  std::function<void(grpc::ServerContext*, Req*, Writer*,
                     grpc::ServerCompletionQueue*, void*)>
      request;
  // Runs on the queue's thread; must not block on other calls. Calls the
  // Reply once, there or later from another thread.
  std::function<void(const Req&, Resp*, Reply)> handle;
};

// A call of a unary method, from its arming to its finish. Deletes itself.
template <typename Req, typename Resp>
class UnaryCall final : public CqTag {
 public:
  // Arms the next call of `method` (which must outlive the server) unless
  // the server is stopping.
  static void Arm(const UnaryMethod<Req, Resp>& method, CallQueue& queue) {
    if (queue.stopping.load()) return;
    auto* call = new UnaryCall(method, queue);
    method.request(&call->ctx_, &call->req_, &call->writer_, queue.cq,
                   static_cast<CqTag*>(call));
  }

  void Proceed(bool ok) override {
    // !ok before a call came: the server is shutting down. Once accepted,
    // the next completion is our finish, sent or not.
    if (accepted_ || !ok) {
      delete this;
      return;
    }
    accepted_ = true;
    Arm(method_, queue_);
    method_.handle(req_, &resp_, [this](const grpc::Status& status) {
      writer_.Finish(resp_, status, static_cast<CqTag*>(this));
    });
  }

 private:
  UnaryCall(const UnaryMethod<Req, Resp>& method, CallQueue& queue)
      : method_(method), queue_(queue) {
    queue_.Born();
  }
  ~UnaryCall() { queue_.Died(); }

  const UnaryMethod<Req, Resp>& method_;
  CallQueue& queue_;
  grpc::ServerContext ctx_;
  Req req_;
  Resp resp_;
  grpc::ServerAsyncResponseWriter<Resp> writer_{&ctx_};
  bool accepted_ = false;  // the queue's thread only
};

// The request function of a generated AsyncService's unary method, e.g.
// &DevicePlugin::AsyncService::RequestAllocate.
template <typename Owner, typename Req, typename Resp>
using UnaryRequestFn = void (Owner::*)(grpc::ServerContext*, Req*,
                                       grpc::ServerAsyncResponseWriter<Resp>*,
                                       grpc::CompletionQueue*,
                                       grpc::ServerCompletionQueue*, void*);

// A method answered at once by `answer` (on the queue's thread).
template <typename Service, typename Owner, typename Req, typename Resp>
UnaryMethod<Req, Resp> Unary(
    Service* service, UnaryRequestFn<Owner, Req, Resp> request,
    std::type_identity_t<std::function<grpc::Status(const Req&, Resp*)>>
        answer) {
  return {[service, request](grpc::ServerContext* ctx, Req* req,
                             grpc::ServerAsyncResponseWriter<Resp>* writer,
                             grpc::ServerCompletionQueue* cq, void* tag) {
            (service->*request)(ctx, req, writer, cq, cq, tag);
          },
          [answer = std::move(answer)](const Req& req, Resp* resp,
                                       const Reply& reply) {
            reply(answer(req, resp));
          }};
}

// A method whose `handle` may answer later, from another thread.
template <typename Service, typename Owner, typename Req, typename Resp>
UnaryMethod<Req, Resp> DeferredUnary(
    Service* service, UnaryRequestFn<Owner, Req, Resp> request,
    std::type_identity_t<std::function<void(const Req&, Resp*, Reply)>>
        handle) {
  return {[service, request](grpc::ServerContext* ctx, Req* req,
                             grpc::ServerAsyncResponseWriter<Resp>* writer,
                             grpc::ServerCompletionQueue* cq, void* tag) {
            (service->*request)(ctx, req, writer, cq, cq, tag);
          },
          std::move(handle)};
}

}  // namespace gdp

#endif  // GDP_RPC_ASYNC_CALL_H_
