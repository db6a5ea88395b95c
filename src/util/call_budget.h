// What one caller allows a piece of work: a deadline, and whether the
// caller has gone (cancelled, or its deadline passed and the server ended
// the call). Made by the gRPC edge for each call the DRA plugin answers
// later, read by the work done for it, so that work is dropped, cut short
// or stopped when nobody waits for its answer any more. Knows no gRPC.
#ifndef GDP_UTIL_CALL_BUDGET_H_
#define GDP_UTIL_CALL_BUDGET_H_

#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gdp {

// Thread-safe.
class CallBudget {
 public:
  // `deadline`: when the caller stops waiting (InfiniteFuture: never).
  explicit CallBudget(absl::Time deadline = absl::InfiniteFuture())
      : deadline_(deadline) {}
  CallBudget(const CallBudget&) = delete;
  CallBudget& operator=(const CallBudget&) = delete;

  absl::Time deadline() const { return deadline_; }

  // The caller has gone: runs every callback registered with OnCancel,
  // once, on this thread. Later calls do nothing.
  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);

  // Whether Cancel() was called.
  bool cancelled() const ABSL_LOCKS_EXCLUDED(mu_);

  // Whether the answer can still reach the caller at `now`: not cancelled
  // and before the deadline.
  bool live(absl::Time now = absl::Now()) const ABSL_LOCKS_EXCLUDED(mu_) {
    return now < deadline_ && !cancelled();
  }

  // Runs `on_cancel` when Cancel() is called; at once, on this thread, if it
  // already was (then the result is 0). `on_cancel` runs under an internal
  // lock: it must be quick and must not call this object. Returns a token
  // for RemoveOnCancel.
  uint64_t OnCancel(std::function<void()> on_cancel) ABSL_LOCKS_EXCLUDED(mu_);

  // After this returns, the callback of `token` is not running and is not
  // called again. 0 is ignored.
  void RemoveOnCancel(uint64_t token) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const absl::Time deadline_;
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
};

// Cancels nothing on destruction; keeps `budget`'s callback registered for
// its scope.
class ScopedOnCancel {
 public:
  ScopedOnCancel(CallBudget& budget, std::function<void()> on_cancel)
      : budget_(budget), token_(budget.OnCancel(std::move(on_cancel))) {}
  ~ScopedOnCancel() { budget_.RemoveOnCancel(token_); }
  ScopedOnCancel(const ScopedOnCancel&) = delete;
  ScopedOnCancel& operator=(const ScopedOnCancel&) = delete;

 private:
  CallBudget& budget_;
  const uint64_t token_;
};

}  // namespace gdp

#endif  // GDP_UTIL_CALL_BUDGET_H_
