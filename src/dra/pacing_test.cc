// The publisher's pacing, on made-up times.
#include "dra/pacing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "absl/random/random.h"

namespace gdp::dra {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000000);

absl::Duration Ms(int64_t ms) { return absl::Milliseconds(ms); }

// Token arithmetic is in doubles: equal to a microsecond.
void ExpectAbout(absl::Time got, absl::Time want) {
  EXPECT_LE(absl::AbsDuration(got - want), absl::Microseconds(1))
      << got << " vs " << want;
}

TEST(JitteredTest, StaysInItsRangeAndSpreads) {
  absl::BitGen gen;
  std::set<int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    absl::Duration d = Jittered(absl::Seconds(4), 0.5, 1.5, gen);
    EXPECT_GE(d, absl::Seconds(2));
    EXPECT_LT(d, absl::Seconds(6));
    seen.insert(absl::ToInt64Milliseconds(d) / 100);
  }
  EXPECT_GT(seen.size(), 30u);  // 40 buckets of 100 ms
}

TEST(RetryBackoffTest, DoublesToItsMaxJitteredDownAndResets) {
  absl::BitGen gen;
  RetryBackoff b(Ms(100), absl::Seconds(5), gen);
  // b: 100, 200, 400, ... 3200 ms, then 5 s; each wait in [b/2, b).
  const std::vector<int64_t> caps = {100,  200,  400,  800,
                                     1600, 3200, 5000, 5000};
  for (int64_t cap : caps) {
    const absl::Duration wait = b.Next();
    EXPECT_GE(wait, Ms(cap / 2)) << cap;
    EXPECT_LT(wait, Ms(cap)) << cap;
  }
  b.Reset();
  EXPECT_LT(b.Next(), Ms(100));
}

TEST(RetryBackoffTest, NodesThatFailedTogetherRetryApart) {
  // 100 publishers failing from the same instant: their 8th retries (b at
  // its 5 s cap) are spread over 2.5 s, not all at once.
  std::vector<absl::Duration> at;
  for (int node = 0; node < 100; ++node) {
    absl::BitGen gen;
    RetryBackoff b(Ms(100), absl::Seconds(5), gen);
    absl::Duration t;
    for (int i = 0; i < 8; ++i) t += b.Next();
    at.push_back(t);
  }
  std::sort(at.begin(), at.end());
  EXPECT_GT(at.back() - at.front(), absl::Seconds(1));
  // No 100 ms window holds more than a fifth of them.
  for (size_t i = 0, j = 0; i < at.size(); ++i) {
    while (at[j] < at[i] - Ms(100)) ++j;
    EXPECT_LE(i - j + 1, 20u) << "at " << at[i];
  }
}

// A watch of each length, one after the other: the earliest and latest
// time the next may start after it ends.
struct WatchCase {
  absl::Duration lasted;
  absl::Duration min_wait, max_wait;
};

TEST(WatchPacerTest, BacksOffAfterShortWatchesAndResetsAfterALongOne) {
  WatchPacing p;  // 1 s apart at least; backoff 1 s doubling to 30 s
  const std::vector<WatchCase> cases = {
      // Ending at once: the backoff b is drawn from [b/2, 3b/2), and the
      // start is 1 s after the last at least.
      {absl::ZeroDuration(), absl::Seconds(1), Ms(1500)},            // b = 1 s
      {absl::ZeroDuration(), absl::Seconds(1), absl::Seconds(3)},    // 2 s
      {Ms(300), absl::Seconds(2), absl::Seconds(6)},                 // 4 s
      {absl::Seconds(9), absl::Seconds(4), absl::Seconds(12)},       // 8 s
      {absl::ZeroDuration(), absl::Seconds(8), absl::Seconds(24)},   // 16 s
      {absl::ZeroDuration(), absl::Seconds(15), absl::Seconds(45)},  // 30 s
      {absl::ZeroDuration(), absl::Seconds(15), absl::Seconds(45)},  // 30 s
      // A watch that lasted: no backoff, and it is reset.
      {absl::Seconds(10), absl::ZeroDuration(), absl::ZeroDuration()},
      {absl::ZeroDuration(), absl::Seconds(1), Ms(1500)},
      // A clean end after 500 ms right after a long one: 1 s apart.
      {absl::Minutes(5), absl::ZeroDuration(), absl::ZeroDuration()},
      {Ms(500), Ms(500), Ms(1500)},
  };
  absl::BitGen gen;
  WatchPacer pacer(p, gen);
  absl::Time start = kT0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const WatchCase& c = cases[i];
    const absl::Time end = start + c.lasted;
    const absl::Time next = pacer.NextStart(start, end);
    EXPECT_GE(next - end, c.min_wait) << "watch " << i;
    EXPECT_LE(next - end, c.max_wait) << "watch " << i;
    EXPECT_GE(next - start, p.min_interval) << "watch " << i;
    EXPECT_EQ(pacer.backing_off(), c.lasted < p.healthy) << "watch " << i;
    start = next;
  }
}

TEST(WatchPacerTest, AWatchEndingAtOnceIsStartedAFewTimesIn10s) {
  // The target: at most 30 watch requests in 10 s.
  for (int run = 0; run < 100; ++run) {
    absl::BitGen gen;
    WatchPacer pacer(WatchPacing{}, gen);
    int watches = 0;
    for (absl::Time t = kT0; t < kT0 + absl::Seconds(10);
         t = pacer.NextStart(t, t)) {
      ++watches;
    }
    EXPECT_LE(watches, 5);
  }
}

TEST(WatchPacerTest, TimeoutsAreSpreadOverTwiceTheTimeout) {
  absl::BitGen gen;
  WatchPacer pacer(WatchPacing{}, gen);
  std::set<int64_t> minutes;
  for (int i = 0; i < 200; ++i) {
    absl::Duration t = pacer.NextTimeout();
    EXPECT_GE(t, absl::Minutes(5));
    EXPECT_LT(t, absl::Minutes(10));
    minutes.insert(absl::ToInt64Minutes(t));
  }
  EXPECT_EQ(minutes.size(), 5u);
}

ForeignWritePacing TestPacing() {
  ForeignWritePacing p;
  p.burst = 3;
  p.interval = absl::Seconds(1);
  p.max_interval = absl::Seconds(8);
  p.calm_after = absl::Minutes(1);
  return p;
}

TEST(ForeignWriteLimiterTest, BurstThenOnePerInterval) {
  ForeignWriteLimiter l(TestPacing());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(l.Available(kT0), kT0) << i;
    l.Take(kT0);
  }
  ExpectAbout(l.Available(kT0), kT0 + absl::Seconds(1));
  ExpectAbout(l.Available(kT0 + Ms(400)), kT0 + absl::Seconds(1));
  l.Take(kT0 + absl::Seconds(1));
  ExpectAbout(l.Available(kT0 + absl::Seconds(1)), kT0 + absl::Seconds(2));
  // Tokens come back up to the burst, no more.
  const absl::Time later = kT0 + absl::Seconds(100);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(l.Available(later), later) << i;
    l.Take(later);
  }
  EXPECT_GT(l.Available(later), later);
}

TEST(ForeignWriteLimiterTest, TightensWhileAFightGoesOnAndRelaxesAfter) {
  ForeignWriteLimiter l(TestPacing());
  absl::Time t = kT0;
  std::vector<int64_t> intervals;
  std::vector<bool> fights;
  for (int round = 0; round < 6; ++round) {
    t = l.Available(t);
    l.Take(t);
    fights.push_back(l.Undid(t));
    intervals.push_back(absl::ToInt64Seconds(l.interval()));
  }
  // Within the burst (3) nothing tightens; the round that spends it
  // begins the fight (said once), and each one after doubles the interval.
  EXPECT_EQ(intervals, (std::vector<int64_t>{1, 1, 2, 4, 8, 8}));
  EXPECT_EQ(fights,
            (std::vector<bool>{false, false, true, false, false, false}));
  // Rounds 4-6 waited for their tokens: 2 + 4 + 8 s.
  EXPECT_EQ(t - kT0, absl::Seconds(14));
  // A calm minute: back to the burst and the first interval.
  t += absl::Minutes(1);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(l.Available(t), t) << i;
    l.Take(t);
  }
  EXPECT_EQ(l.interval(), absl::Seconds(1));
  EXPECT_TRUE(l.Undid(t));  // the burst spent again: a new fight, said again
}

TEST(ForeignWriteLimiterTest, ForeignWritesNotUndoneDoNotTighten) {
  // Someone labels our slices: a reconcile each time, nothing written.
  ForeignWriteLimiter l(TestPacing());
  absl::Time t = kT0;
  for (int i = 0; i < 20; ++i) {
    t = l.Available(t);
    l.Take(t);
  }
  EXPECT_EQ(l.interval(), absl::Seconds(1));
  EXPECT_LE(t - kT0, absl::Seconds(18));
}

}  // namespace
}  // namespace gdp::dra
