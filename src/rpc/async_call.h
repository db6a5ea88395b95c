// Serving gRPC calls on the async (completion queue) API: one thread per
// server waits in the queue and is woken only by calls, so an idle server
// costs nothing. This file has the unary calls; device_stream.h the
// streams. Knows no GPUs.
#ifndef GDP_RPC_ASYNC_CALL_H_
#define GDP_RPC_ASYNC_CALL_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "util/call_budget.h"

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

// The answer to a call that is answered later, from any thread. Copyable;
// the first answer counts. When the caller goes first (it cancelled, its
// deadline passed, or the server shuts down), the call is ended at once
// with CANCELLED and later answers are dropped: so no call outlives its
// caller, and a server's shutdown never waits for work in flight.
template <typename Resp>
class DeferredReply {
 public:
  // What ends the call: fills in its response and finishes it.
  using Finish = std::function<void(const grpc::Status&, Resp&&)>;

  explicit DeferredReply(Finish finish)
      : state_(std::make_shared<State>(std::move(finish))) {}

  // Answers `resp` with `status`. Returns false (and drops them) when the
  // call was answered or abandoned before.
  bool operator()(const grpc::Status& status, Resp resp) const {
    absl::MutexLock lock(&state_->mu);
    if (!state_->finish) return false;
    Finish finish = std::move(state_->finish);
    state_->finish = nullptr;
    finish(status, std::move(resp));
    return true;
  }

  // Whether an answer was given (or the call abandoned).
  bool done() const {
    absl::MutexLock lock(&state_->mu);
    return state_->finish == nullptr;
  }

 private:
  struct State {
    explicit State(Finish f) : finish(std::move(f)) {}
    absl::Mutex mu;
    Finish finish ABSL_GUARDED_BY(mu);  // null once used
  };
  std::shared_ptr<State> state_;
};

// A unary method of a generated AsyncService: how to ask for its next call
// and how to answer one: at once (`handle`) or later (`deferred`; exactly
// one of them is set).
template <typename Req, typename Resp>
struct UnaryMethod {
  using Writer = grpc::ServerAsyncResponseWriter<Resp>;
  std::function<void(grpc::ServerContext*, Req*, Writer*,
                     grpc::ServerCompletionQueue*, void*)>
      request;
  // Runs on the queue's thread; must not block on other calls. Calls the
  // Reply once, there.
  std::function<void(const Req&, Resp*, Reply)> handle;
  // Runs on the queue's thread and must not block: hands the work to
  // another thread, which answers through the DeferredReply. The budget
  // holds the caller's deadline and is cancelled when the caller goes.
  std::function<void(const Req&, std::shared_ptr<CallBudget>,
                     DeferredReply<Resp>)>
      deferred;
};

// The caller's deadline as gRPC gives it; InfiniteFuture when none was set.
inline absl::Time CallDeadline(const grpc::ServerContext& ctx) {
  const auto deadline = ctx.deadline();
  if (deadline >=
      std::chrono::system_clock::now() + std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

// A call of a unary method, from its arming to its finish. Deletes itself.
template <typename Req, typename Resp>
class UnaryCall final : public CqTag {
 public:
  // Arms the next call of `method` (which must outlive the server) unless
  // the server is stopping.
  static void Arm(const UnaryMethod<Req, Resp>& method, CallQueue& queue) {
    if (queue.stopping.load()) return;
    auto* call = new UnaryCall(method, queue);
    // Deferred calls learn when their caller goes; the tag comes once the
    // call is over (never, for a call that is never matched).
    if (method.deferred) call->ctx_.AsyncNotifyWhenDone(&call->done_tag_);
    method.request(&call->ctx_, &call->req_, &call->writer_, queue.cq,
                   static_cast<CqTag*>(call));
  }

  void Proceed(bool ok) override {
    // !ok before a call came: the server is shutting down. Once accepted,
    // the next completion is our finish, sent or not.
    if (!accepted_ && !ok) {
      delete this;
      return;
    }
    if (accepted_) {
      finished_ = true;
      MaybeDelete();
      return;
    }
    accepted_ = true;
    Arm(method_, queue_);
    if (!method_.deferred) {
      method_.handle(req_, &resp_, [this](const grpc::Status& status) {
        writer_.Finish(resp_, status, static_cast<CqTag*>(this));
      });
      return;
    }
    budget_ = std::make_shared<CallBudget>(CallDeadline(ctx_));
    reply_ = std::make_unique<DeferredReply<Resp>>(
        [this](const grpc::Status& status, Resp&& resp) {
          resp_ = std::move(resp);
          writer_.Finish(resp_, status, static_cast<CqTag*>(this));
        });
    method_.deferred(req_, budget_, *reply_);
  }

 private:
  // The deferred call's end: its caller may have gone.
  class DoneTag final : public CqTag {
   public:
    explicit DoneTag(UnaryCall* call) : call_(call) {}
    void Proceed(bool) override { call_->Done(); }

   private:
    UnaryCall* const call_;
  };

  UnaryCall(const UnaryMethod<Req, Resp>& method, CallQueue& queue)
      : method_(method), queue_(queue) {
    queue_.Born();
  }
  ~UnaryCall() { queue_.Died(); }

  void Done() {
    done_ = true;
    if (ctx_.IsCancelled()) {
      if (budget_ != nullptr) budget_->Cancel();
      // Ends the call now; the work's answer, when it comes, is dropped.
      if (reply_ != nullptr) {
        (*reply_)(grpc::Status(grpc::StatusCode::CANCELLED,
                               "the caller went before the answer was ready"),
                  Resp());
      }
    }
    MaybeDelete();
  }

  // Both completions of a deferred call (its finish and its done tag), or
  // the finish of another, have come.
  void MaybeDelete() {
    if (finished_ && (done_ || !method_.deferred)) delete this;
  }

  const UnaryMethod<Req, Resp>& method_;
  CallQueue& queue_;
  grpc::ServerContext ctx_;
  Req req_;
  Resp resp_;
  grpc::ServerAsyncResponseWriter<Resp> writer_{&ctx_};
  DoneTag done_tag_{this};
  // The queue's thread only:
  bool accepted_ = false;
  bool finished_ = false;  // our Finish has completed
  bool done_ = false;      // the done tag came
  std::shared_ptr<CallBudget> budget_;
  std::unique_ptr<DeferredReply<Resp>> reply_;
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
          },
          nullptr};
}

// A method answered later, from another thread, through a DeferredReply;
// the caller's deadline and departure reach the work through its budget.
template <typename Service, typename Owner, typename Req, typename Resp>
UnaryMethod<Req, Resp> DeferredUnary(
    Service* service, UnaryRequestFn<Owner, Req, Resp> request,
    std::type_identity_t<std::function<
        void(const Req&, std::shared_ptr<CallBudget>, DeferredReply<Resp>)>>
        deferred) {
  return {[service, request](grpc::ServerContext* ctx, Req* req,
                             grpc::ServerAsyncResponseWriter<Resp>* writer,
                             grpc::ServerCompletionQueue* cq, void* tag) {
            (service->*request)(ctx, req, writer, cq, cq, tag);
          },
          nullptr, std::move(deferred)};
}

}  // namespace gdp

#endif  // GDP_RPC_ASYNC_CALL_H_
