// How the slice publisher paces its requests to the API server, so that
// nodes that fail together do not retry together and nothing outside can
// make it loop: the slice watch's restarts (a minimum interval and jittered
// exponential backoff after short watches, as client-go's reflector does)
// and the reconciles that other writers' changes trigger (a token bucket
// that tightens while someone keeps overwriting the pool). Pure: the caller
// passes the times in; jitter comes from the generator given.
#ifndef GDP_DRA_PACING_H_
#define GDP_DRA_PACING_H_

#include <cstdint>

#include "absl/random/bit_gen_ref.h"
#include "absl/time/time.h"

namespace gdp::dra {

// A duration drawn uniformly from [lo * d, hi * d).
absl::Duration Jittered(absl::Duration d, double lo, double hi,
                        absl::BitGenRef gen);

// Waits between retries of a failed attempt: drawn from [b/2, b), b
// doubling from `initial` to `max`, so that nodes that failed together (an
// API server outage) spread their retries instead of coming back in step.
// Not thread-safe.
class RetryBackoff {
 public:
  RetryBackoff(absl::Duration initial, absl::Duration max, absl::BitGenRef gen);

  // The wait before the next retry; doubles b.
  absl::Duration Next();
  // An attempt succeeded: b is `initial` again.
  void Reset() { b_ = initial_; }

 private:
  const absl::Duration initial_, max_;
  absl::BitGenRef gen_;
  absl::Duration b_;
};

struct WatchPacing {
  // The least time between the starts of two watch requests.
  absl::Duration min_interval = absl::Seconds(1);
  // After a watch that ended (cleanly, 410 Expired or failed) sooner than
  // `healthy` after it started, the next one waits a backoff drawn from
  // [b/2, 3b/2), b doubling from initial_backoff to max_backoff; a watch
  // that lasted `healthy` resets b.
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
  absl::Duration healthy = absl::Seconds(10);
  // How long a watch request asks to run (timeoutSeconds): drawn from
  // [timeout, 2 * timeout) per request, so that the watches of nodes that
  // started together are not renewed together.
  absl::Duration timeout = absl::Minutes(5);
};

// Not thread-safe: one per watch loop.
class WatchPacer {
 public:
  WatchPacer(WatchPacing pacing, absl::BitGenRef gen);

  // The timeout for the next watch request.
  absl::Duration NextTimeout();

  // A watch started at `started` ended at `ended`: when the next may start
  // (never before started + min_interval). Advances the backoff.
  absl::Time NextStart(absl::Time started, absl::Time ended);

  // Whether the last NextStart backed off (the watch was short).
  bool backing_off() const { return backing_off_; }

 private:
  const WatchPacing pacing_;
  absl::BitGenRef gen_;
  absl::Duration backoff_;
  bool backing_off_ = false;
};

struct ForeignWritePacing {
  // Reconciles that foreign writes may trigger at once after a calm spell
  // (the kubelet deleting our slices when it starts needs one).
  int burst = 5;
  // One more is allowed per `interval`. Once the burst is spent, every
  // foreign write we undo (a round of a fight over the pool) doubles the
  // interval, up to max_interval.
  absl::Duration interval = absl::Seconds(1);
  absl::Duration max_interval = absl::Minutes(1);
  // No foreign write undone for this long: the fight is over, back to
  // `burst` tokens and `interval`.
  absl::Duration calm_after = absl::Minutes(2);
};

// A token bucket for reconciles triggered only by others' writes. Not
// thread-safe.
class ForeignWriteLimiter {
 public:
  explicit ForeignWriteLimiter(ForeignWritePacing pacing);

  // When the next such reconcile may run: `now` or earlier when a token is
  // there.
  absl::Time Available(absl::Time now);

  // Takes a token (Available(now) <= now).
  void Take(absl::Time now);

  // The reconcile after a foreign write had to write (it undid someone
  // else's change). With the burst spent, that is a round of a fight: the
  // interval doubles. Result: true for the first such round since the
  // last calm spell (the fight begins).
  bool Undid(absl::Time now);

  absl::Duration interval() const { return interval_; }

 private:
  // Refills the bucket up to `now`; resets after a calm spell.
  void Advance(absl::Time now);

  const ForeignWritePacing pacing_;
  double tokens_;
  absl::Duration interval_;
  absl::Time refilled_ = absl::InfinitePast();  // tokens_ counted up to here
  absl::Time last_undone_ = absl::InfinitePast();
  bool fighting_ = false;
};

}  // namespace gdp::dra

#endif  // GDP_DRA_PACING_H_
