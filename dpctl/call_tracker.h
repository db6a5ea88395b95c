// The calls in progress on one client (PluginClient, DraClient), so that
// Cancel can reach them.
#ifndef GDP_DPCTL_CALL_TRACKER_H_
#define GDP_DPCTL_CALL_TRACKER_H_

#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dial.h"
#include "grpcpp/grpcpp.h"

namespace gdp::dpctl {

// Thread-safe.
class CallTracker {
 public:
  // Registers `context` so Cancel can reach it; false (nothing registered)
  // when already cancelled. `context` must be untracked before it is
  // destroyed.
  bool Track(grpc::ClientContext* context);
  // Track for a stream: first sets `deadline` on `context` (none for
  // absl::InfiniteFuture()).
  bool TrackStream(grpc::ClientContext* context, absl::Time deadline);
  void Untrack(grpc::ClientContext* context);
  // Cancels every tracked context and makes every later Track fail.
  // Idempotent.
  void Cancel();
  bool cancelled();

  // Runs one unary call, `call(context, response)`, with a deadline
  // `timeout` from now, tracked for Cancel. Fails with the call's status,
  // or with CANCELLED `closed_message` when already cancelled.
  template <typename Response, typename Call>
  absl::StatusOr<Response> Unary(absl::Duration timeout,
                                 const char* closed_message, Call call) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    if (!Track(&context)) return absl::CancelledError(closed_message);
    Response response;
    grpc::Status status = call(&context, &response);
    Untrack(&context);
    if (!status.ok()) return FromGrpc(status);
    return response;
  }

 private:
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::set<grpc::ClientContext*> active_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gdp::dpctl

#endif  // GDP_DPCTL_CALL_TRACKER_H_
