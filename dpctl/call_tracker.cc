#include "call_tracker.h"

namespace gdp::dpctl {

bool CallTracker::Track(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  active_.insert(context);
  return true;
}

bool CallTracker::TrackStream(grpc::ClientContext* context,
                              absl::Time deadline) {
  if (deadline != absl::InfiniteFuture()) {
    context->set_deadline(absl::ToChronoTime(deadline));
  }
  return Track(context);
}

void CallTracker::Untrack(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  active_.erase(context);
}

void CallTracker::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  // Contexts are untracked under mu_ before they are destroyed, so each one
  // here is alive.
  for (grpc::ClientContext* context : active_) context->TryCancel();
}

bool CallTracker::cancelled() {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

}  // namespace gdp::dpctl
