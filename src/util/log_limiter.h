// Rate limit for a log line a client can trigger at will (a refused
// Allocate): the first few per window are logged, the rest are counted and
// the count is logged with the next line that passes.
#ifndef GDP_UTIL_LOG_LIMITER_H_
#define GDP_UTIL_LOG_LIMITER_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gdp {

// Thread-safe; one per log site (a function-local static).
class LogLimiter {
 public:
  // At most `burst` lines per `window`.
  explicit LogLimiter(int burst = 10, absl::Duration window = absl::Seconds(10))
      : burst_(burst), window_(window) {}

  // Whether to log this one. When true, *suppressed is how many were not
  // logged since the last that was (to say so in the line).
  bool Allow(uint64_t* suppressed) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    if (now - window_start_ >= window_) {
      window_start_ = now;
      in_window_ = 0;
    }
    if (in_window_ >= burst_) {
      ++suppressed_;
      return false;
    }
    ++in_window_;
    *suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  const int burst_;
  const absl::Duration window_;
  absl::Mutex mu_;
  absl::Time window_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int in_window_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gdp

#endif  // GDP_UTIL_LOG_LIMITER_H_
