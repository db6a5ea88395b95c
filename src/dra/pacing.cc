#include "dra/pacing.h"

#include <algorithm>

#include "absl/random/distributions.h"

namespace gdp::dra {

absl::Duration Jittered(absl::Duration d, double lo, double hi,
                        absl::BitGenRef gen) {
  return d * absl::Uniform(gen, lo, hi);
}

RetryBackoff::RetryBackoff(absl::Duration initial, absl::Duration max,
                           absl::BitGenRef gen)
    : initial_(initial), max_(max), gen_(gen), b_(initial) {}

absl::Duration RetryBackoff::Next() {
  const absl::Duration wait = Jittered(b_, 0.5, 1.0, gen_);
  b_ = std::min(b_ * 2, max_);
  return wait;
}

WatchPacer::WatchPacer(WatchPacing pacing, absl::BitGenRef gen)
    : pacing_(pacing), gen_(gen), backoff_(pacing.initial_backoff) {}

absl::Duration WatchPacer::NextTimeout() {
  return Jittered(pacing_.timeout, 1.0, 2.0, gen_);
}

absl::Time WatchPacer::NextStart(absl::Time started, absl::Time ended) {
  const absl::Time earliest = started + pacing_.min_interval;
  backing_off_ = ended - started < pacing_.healthy;
  if (!backing_off_) {
    backoff_ = pacing_.initial_backoff;
    return std::max(earliest, ended);
  }
  const absl::Time next =
      std::max(earliest, ended + Jittered(backoff_, 0.5, 1.5, gen_));
  backoff_ = std::min(backoff_ * 2, pacing_.max_backoff);
  return next;
}

ForeignWriteLimiter::ForeignWriteLimiter(ForeignWritePacing pacing)
    : pacing_(pacing), tokens_(pacing.burst), interval_(pacing.interval) {}

void ForeignWriteLimiter::Advance(absl::Time now) {
  if (last_undone_ != absl::InfinitePast() &&
      now - last_undone_ >= pacing_.calm_after) {
    tokens_ = pacing_.burst;
    interval_ = pacing_.interval;
    fighting_ = false;
    last_undone_ = absl::InfinitePast();
  } else if (refilled_ != absl::InfinitePast() && now > refilled_) {
    tokens_ = std::min<double>(
        pacing_.burst,
        tokens_ + absl::FDivDuration(now - refilled_, interval_));
  }
  refilled_ = std::max(refilled_, now);
}

absl::Time ForeignWriteLimiter::Available(absl::Time now) {
  Advance(now);
  // (Less than a microsecond's worth short is rounding, not a wait.)
  if (tokens_ >= 1 - 1e-6) return now;
  return now + interval_ * (1 - tokens_);
}

void ForeignWriteLimiter::Take(absl::Time now) {
  Advance(now);
  tokens_ -= 1;
}

bool ForeignWriteLimiter::Undid(absl::Time now) {
  Advance(now);
  last_undone_ = now;
  if (tokens_ >= 1 - 1e-6) return false;  // within the burst
  interval_ = std::min(interval_ * 2, pacing_.max_interval);
  const bool begins = !fighting_;
  fighting_ = true;
  return begins;
}

}  // namespace gdp::dra
